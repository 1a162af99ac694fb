package dsyncmongo

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Trimming the events collection, on FerretDB only. MongoDB bounds a
// capped collection itself (and deletes from one only from 5.0.7 on):
// there the driver deletes nothing. FerretDB does not, and answers a
// waiting tailable cursor by re-reading the collection every 10 ms,
// decoding every event up to the last one the cursor returned, so the
// events kept cost every follower CPU a hundred times a second.
//
// A process whose follower read one of its own events deletes the events
// the follower returned trimSlack or more ago, except the newest one, at
// most once per trimEvery, until none is left to delete. Every cursor
// that keeps up reads an event within about 20 ms of its insert; what is
// trimmed is missed only by a cursor that lags further, or opens later
// (it reopens a second or more after a failure): a waiter it should have
// woken looks again within the safety poll interval, and a waiter whose
// own stream reopens announces itself again (driver.Feed.Replay). A
// cursor whose last event is deleted fails on FerretDB, and reopens; the
// newest event is never deleted.
//
// Deleting by _id what the cursor returned, rather than by the "at" of
// events, makes trimming independent of the senders' clocks (and of how
// late an insert lands).
const (
	trimSlack = 250 * time.Millisecond
	trimEvery = 250 * time.Millisecond
	// maxSeen bounds the events remembered for trimming.
	maxSeen = 4096
)

// A seenEvent is an event the cursor returned, and when (local monotonic).
type seenEvent struct {
	id bson.ObjectID
	at time.Duration
}

// A trimmer deletes the events a follower read, in a goroutine of its
// own, while that follower's cursor is open.
type trimmer struct {
	s      *lockStore
	asked  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	seen []seenEvent // oldest first
}

func newTrimmer(s *lockStore) *trimmer {
	ctx, cancel := context.WithCancel(context.Background())
	t := &trimmer{s: s, asked: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.run(ctx)
	}()
	return t
}

func (t *trimmer) stop() {
	t.cancel()
	<-t.done
}

// note records an event the cursor returned; one of ours asks for a trim.
func (t *trimmer) note(id bson.ObjectID, ours bool) {
	t.mu.Lock()
	if len(t.seen) >= maxSeen {
		t.seen = append(t.seen[:0], t.seen[len(t.seen)/2:]...)
	}
	t.seen = append(t.seen, seenEvent{id: id, at: t.s.mono()})
	t.mu.Unlock()
	if ours {
		select {
		case t.asked <- struct{}{}:
		default: // already asked
		}
	}
}

// run deletes old events until ctx ends. Asked, it deletes the events
// seen trimSlack or more ago, except the newest one, waiting for them to
// age and at least trimEvery between deletes; and once more for those
// that were too young, so that a quiet stream ends with one event kept.
func (t *trimmer) run(ctx context.Context) {
	var last time.Duration
	first := true
	for {
		select {
		case <-t.asked:
		case <-ctx.Done():
			return
		}
		for range 2 {
			t.mu.Lock()
			var due time.Duration
			if len(t.seen) > 1 {
				due = t.seen[0].at + trimSlack
			}
			t.mu.Unlock()
			if due == 0 {
				break // nothing but the newest event
			}
			if !first {
				due = max(due, last+trimEvery)
			}
			if d := due - t.s.mono(); d > 0 {
				timer := time.NewTimer(d)
				select {
				case <-timer.C:
				case <-ctx.Done():
					timer.Stop()
					return
				}
			}
			if ids := t.take(t.s.mono()); len(ids) > 0 {
				t.delete(ctx, ids)
			}
			last, first = t.s.mono(), false
		}
	}
}

// take removes from seen, and returns, the events seen trimSlack or more
// before now, except the newest.
func (t *trimmer) take(now time.Duration) []bson.ObjectID {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for n < len(t.seen)-1 && now-t.seen[n].at >= trimSlack {
		n++
	}
	ids := make([]bson.ObjectID, n)
	for i := range n {
		ids[i] = t.seen[i].id
	}
	t.seen = append(t.seen[:0], t.seen[n:]...)
	return ids
}

// delete deletes the events ids. Best effort.
func (t *trimmer) delete(ctx context.Context, ids []bson.ObjectID) {
	err := t.s.write(ctx, "trim events", func(ctx context.Context) error {
		_, err := t.s.events.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		return err
	})
	if err != nil {
		t.s.cfg.logger.Debug("dsyncmongo: trimming events failed", slog.Any("err", err))
	}
}
