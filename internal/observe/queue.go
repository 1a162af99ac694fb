// Package observe delivers events to user code (metrics observers)
// without letting it hold up the code that reports them: Send never
// blocks, and one goroutine per Queue calls the observer, in order. When
// the observer falls behind by more than the queue holds, events are
// dropped and counted, and the count is delivered before the next event
// that fits.
package observe

import "sync"

// Size is how many events a Queue holds for a slow observer.
const Size = 1024

// A Queue runs events one at a time on its own goroutine.
type Queue struct {
	events  chan func()
	dropped func(n int) // told how many events were dropped; may be nil
	done    chan struct{}

	mu     sync.Mutex
	lost   int  // events dropped and not yet reported
	closed bool // Send drops everything after Close
}

// New starts a Queue. dropped, if not nil, is told (on the Queue's
// goroutine) how many events were dropped since it was last told.
func New(dropped func(n int)) *Queue {
	q := &Queue{events: make(chan func(), Size), dropped: dropped, done: make(chan struct{})}
	go q.run()
	return q
}

// Send queues ev, or drops it if the queue is full or closed. It never
// blocks (but for a mutex held only to count).
func (q *Queue) Send(ev func()) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	select {
	case q.events <- ev:
	default:
		q.lost++
	}
}

// Close delivers the events already queued, then stops the goroutine and
// returns. Events sent after Close are dropped.
func (q *Queue) Close() {
	if q == nil {
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		<-q.done
		return
	}
	q.closed = true
	close(q.events)
	q.mu.Unlock()
	<-q.done
}

func (q *Queue) run() {
	defer close(q.done)
	for ev := range q.events {
		q.mu.Lock()
		lost := q.lost
		q.lost = 0
		q.mu.Unlock()
		if lost > 0 && q.dropped != nil {
			q.dropped(lost)
		}
		ev()
	}
	if q.lost > 0 && q.dropped != nil {
		q.dropped(q.lost)
	}
}
