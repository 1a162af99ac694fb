package memory

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The store's feed: every event is delivered at once to every other
// follower.

// Follow implements driver.Feed: the follower is live at once, and
// receives every event published from then on, until stop.
func (r roles) Follow(h driver.FeedHandler) (stop func()) {
	s := r.s
	// Registered before Live, so that an event published from Live on (by
	// Live itself, too, as a Client's does) is delivered; running until
	// Live returns, so that events wait for it (one goroutine at a time).
	f := &follower{h: h, running: true}
	s.feedMu.Lock()
	s.followers[f] = struct{}{}
	s.feedMu.Unlock()
	h.Live(1)
	f.mu.Lock()
	f.running = len(f.q) > 0
	if f.running {
		go f.deliver()
	}
	f.mu.Unlock()
	return func() {
		s.feedMu.Lock()
		delete(s.followers, f)
		s.feedMu.Unlock()
		f.stop()
	}
}

// Publish implements driver.Feed.
func (r roles) Publish(ctx context.Context, e driver.Event) error {
	return r.s.do(ctx, Call{Op: "Publish", Write: true, Event: e}, func() {
		r.s.feedMu.Lock()
		defer r.s.feedMu.Unlock()
		for f := range r.s.followers {
			f.push(e)
		}
	})
}

// Replay implements driver.Feed: a follower is live from the start.
func (roles) Replay() time.Duration { return 0 }

// A follower delivers events to its handler in the order they were
// published, from a goroutine that runs while it has events to deliver
// (so that a store nobody closes leaves none behind).
type follower struct {
	h       driver.FeedHandler
	mu      sync.Mutex
	q       []driver.Event
	running bool
	stopped bool
}

func (f *follower) push(e driver.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.q = append(f.q, e)
	if !f.running {
		f.running = true
		go f.deliver()
	}
}

func (f *follower) stop() {
	f.mu.Lock()
	f.stopped = true
	f.q = nil
	f.mu.Unlock()
}

func (f *follower) deliver() {
	for {
		f.mu.Lock()
		q := f.q
		f.q = nil
		if len(q) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		for _, e := range q {
			f.h.Event(e)
		}
	}
}
