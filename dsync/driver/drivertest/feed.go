package drivertest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// feedWait bounds how long the suite waits for a follower to turn live, or
// for an event to arrive.
const feedWait = 30 * time.Second

// recorder is a driver.FeedHandler that records what it is told, and
// reports being told from two goroutines at once.
type recorder struct {
	t    *testing.T
	name string
	busy atomic.Int32

	mu     sync.Mutex
	live   int
	off    error // Down(err, true)
	events []driver.Event
	onLive func() // called from the first Live
}

func (r *recorder) enter() {
	if r.busy.Add(1) != 1 {
		r.t.Errorf("%s: the feed reported to the handler from two goroutines at once", r.name)
	}
}

func (r *recorder) leave() { r.busy.Add(-1) }

func (r *recorder) Live(uint64) {
	r.enter()
	defer r.leave()
	r.mu.Lock()
	r.live++
	f := r.onLive
	if r.live > 1 {
		f = nil
	}
	r.mu.Unlock()
	if f != nil {
		f()
	}
}

func (r *recorder) Down(err error, off bool) {
	r.enter()
	defer r.leave()
	r.mu.Lock()
	defer r.mu.Unlock()
	if off {
		r.off = err
	}
}

func (r *recorder) Event(e driver.Event) {
	r.enter()
	defer r.leave()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// has reports whether e was delivered (any number of times).
func (r *recorder) has(e driver.Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, got := range r.events {
		if got.Kind == e.Kind && got.Key == e.Key && got.Epoch == e.Epoch && got.Proc == e.Proc && got.Until.Equal(e.Until) {
			return true
		}
	}
	return false
}

// waitLive waits until the follower is live, and skips the test if the
// feed says it can never be.
func (r *recorder) waitLive(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(feedWait); ; time.Sleep(5 * time.Millisecond) {
		r.mu.Lock()
		live, off := r.live > 0, r.off
		r.mu.Unlock()
		switch {
		case live:
			return
		case off != nil:
			t.Skipf("%s: the feed is off on this store: %v", r.name, off)
		case time.Now().After(deadline):
			t.Fatalf("%s: not live within %v", r.name, feedWait)
		}
	}
}

// waitEvent waits until e is delivered.
func (r *recorder) waitEvent(t *testing.T, e driver.Event, resend func()) {
	t.Helper()
	next := time.Now().Add(resendAfter)
	for deadline := time.Now().Add(feedWait); !r.has(e); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %+v not delivered within %v (sent again every %v)", r.name, e, feedWait, resendAfter)
		}
		if time.Now().After(next) {
			// A hint may be lost (FerretDB's tailable cursors skip an
			// event now and then); the engine sends its hints again, and
			// so does the suite.
			t.Logf("%s: %+v not delivered within %v; sending it again", r.name, e, resendAfter)
			resend()
			next = time.Now().Add(resendAfter)
		}
	}
}

// resendAfter is how long the suite waits for an event before sending it
// again.
const resendAfter = 3 * time.Second

// follow starts a follower of f, stopped when t ends, and returns the
// stop function (which may be called again).
func follow(t *testing.T, f driver.Feed, r *recorder) (stop func()) {
	stop = sync.OnceFunc(f.Follow(r))
	t.Cleanup(stop)
	return stop
}

// testFeed: a follower turns live; it receives the events another store on
// the same data publishes from then on (also those published from within
// Live, as a Client does); once stopped, it receives none. Events may come
// in any order, more than once, or be lost now and then: one not delivered
// within resendAfter is published again, as the engine would.
func (s *suite) testFeed(t *testing.T) {
	a, ctx := s.store(t)
	fa := need(t, a.Roles().Feed, "Feed")
	if fa.Replay() < 0 {
		t.Errorf("Replay() = %v, want at least 0", fa.Replay())
	}
	if s.peer == nil {
		ra := &recorder{t: t, name: "follower"}
		follow(t, fa, ra)
		ra.waitLive(t)
		t.Skip("no Peer: delivery between stores not checked")
	}
	b := s.peer(t, a)
	for range 2 {
		if err := b.Prepare(ctx); err != nil {
			t.Fatalf("Prepare (peer): %v", err)
		}
	}
	fb := b.Roles().Feed
	if fb == nil {
		t.Fatal("the peer store serves no Roles.Feed")
	}
	until := expiry(a, time.Minute)
	event := func(kind driver.EventKind, epoch uint64, proc string) driver.Event {
		e := driver.Event{Kind: kind, Key: "k", Epoch: epoch, Proc: proc}
		if kind == driver.Waiting {
			e.Until = until.Add(time.Duration(epoch) * time.Millisecond)
		}
		return e
	}
	publish := func(f driver.Feed, e driver.Event) {
		if err := f.Publish(ctx, e); err != nil {
			t.Errorf("Publish(%+v): %v", e, err)
		}
	}
	inLive := event(driver.Waiting, 1, "proc-a")
	ra := &recorder{t: t, name: "a's follower"}
	rb := &recorder{t: t, name: "b's follower", onLive: func() { publish(fa, inLive) }}
	follow(t, fa, ra)
	stopB := follow(t, fb, rb)
	ra.waitLive(t)
	rb.waitLive(t)

	toB := []driver.Event{inLive, event(driver.Waiting, 2, "proc-a"), event(driver.Ended, 3, "proc-a")}
	toA := []driver.Event{event(driver.Ended, 4, "proc-b"), event(driver.Waiting, 5, "proc-b")}
	for _, e := range toB[1:] {
		publish(fa, e)
	}
	for _, e := range toA {
		publish(fb, e)
	}
	for _, e := range toB {
		rb.waitEvent(t, e, func() { publish(fa, e) })
	}
	for _, e := range toA {
		ra.waitEvent(t, e, func() { publish(fb, e) })
	}

	// Stopped, b's follower receives nothing more; a's, which still
	// follows, shows that the event was delivered.
	stopB()
	after := event(driver.Ended, 6, "proc-b")
	publish(fb, after)
	ra.waitEvent(t, after, func() { publish(fb, after) })
	time.Sleep(100 * time.Millisecond)
	if rb.has(after) {
		t.Errorf("an event published after stop was delivered to the stopped follower")
	}
}
