package dsyncmongo

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"

	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/dsync"
)

// TestCloseFreesKeysAtOnceAndLeavesNothingRunning: Close of a backend that
// holds a key (TTL one minute) and waits for another lets a process
// waiting for the held key take it at once, not after the TTL; its waiting
// Lock returns ErrClosed; and once everything the test opened is closed,
// no goroutine of it is left.
func TestCloseFreesKeysAtOnceAndLeavesNothingRunning(t *testing.T) {
	// Registered first, so it runs last: after every Close and
	// disconnect the test's other cleanups do. The goroutines running
	// now (the harness's, earlier tests' that end by themselves) are
	// not the test's: the list is taken here, not when the check runs,
	// which would take every goroutine left as one to ignore.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	ps := newProcs(t, 2, dsync.ClientWithTTL(time.Minute))
	ctx := testCtx(t, time.Minute)
	holder := newMutex(t, ps[0].b.Client, "k")
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	blocker := newMutex(t, ps[1].b.Client, "j")
	if err := blocker.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waiting := newMutex(t, ps[0].b.Client, "j")
	waited := make(chan error, 1)
	go func() { waited <- waiting.LockContext(ctx) }()
	taker := newMutex(t, ps[1].b.Client, "k")
	took := lockInBackground(t, ctx, taker)
	time.Sleep(time.Second) // both wait

	closed := time.Now()
	if err := ps[0].b.Close(); err != nil {
		t.Fatal(err)
	}
	at, ok := <-took
	if !ok {
		t.FailNow()
	}
	t.Logf("taken %v after Close", at.Sub(closed).Round(time.Millisecond))
	if d := at.Sub(closed); d > 5*time.Second {
		t.Errorf("the key was taken %v after its holder's backend closed, want at once (TTL 1m)", d)
	}
	if err := <-waited; !errors.Is(err, dsync.ErrClosed) {
		t.Errorf("a Lock waiting on the closed backend returned %v, want ErrClosed", err)
	}
	if err := taker.UnlockContext(ctx); err != nil {
		t.Error(err)
	}
	if err := blocker.UnlockContext(ctx); err != nil {
		t.Error(err)
	}
	if err := ps[1].b.Close(); err != nil {
		t.Error(err)
	}
}

// TestCloseSendsNothingOnceTheServerIsGone: a backend whose writes get no
// answer (its server is gone) loses its hold at the deadline; its Close
// then sends nothing, nor tries to: no end for the lost hold (its lease
// ended it), no cleaning of old sessions, which would only wait for a
// server that is not there. Close is called the moment Lost closes: the
// goroutine that judged the session over is stopped there, before it
// reports the loss (a Close that ran in that window once sent the hold
// an end, and its flush the end again).
func TestCloseSendsNothingOnceTheServerIsGone(t *testing.T) {
	var gone atomic.Bool
	var mu sync.Mutex
	var tried, sent []string // writes tried, commands sent, once gone
	fault := func(op string) error {
		if !gone.Load() {
			return nil
		}
		mu.Lock()
		tried = append(tried, op)
		mu.Unlock()
		return errors.New("no server answered")
	}
	stop, judged, resume := stopWhenJudged()
	defer resume()
	// Without an outage grace the session is judged over at its deadline;
	// with one it is suspended, and Close marks its claims dead (the server may
	// be back: lease.TestCloseWhileSuspended).
	p := newProcs(t, 1, withoutWakeups(), withFault(fault), dsync.ClientWithTTL(time.Second), dsync.ClientWithOutageGrace(0), stop)[0]
	p.cmd.onStart = func(e *event.CommandStartedEvent) {
		// Called with the counter's lock held: the kinds the driver and
		// the clock estimate send on their own are not Close's.
		k := kindOf(e)
		if !gone.Load() || k == clockSample || slices.Contains([]string{"hello", "isMaster", "ping", "buildInfo", "endSessions"}, k) {
			return
		}
		mu.Lock()
		sent = append(sent, k)
		mu.Unlock()
	}
	ctx := testCtx(t, time.Minute)
	m := newMutex(t, p.b.Client, "k")
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	gone.Store(true)
	select {
	case <-judged:
	case <-ctx.Done():
		t.Fatal("the session was not judged over with every write failing")
	}
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost still open once the session was judged over")
	}
	mu.Lock()
	tried, sent = nil, nil
	mu.Unlock()
	if err := p.b.Close(); err != nil {
		t.Fatal(err)
	}
	resume()
	mu.Lock()
	defer mu.Unlock()
	if len(tried) > 0 || len(sent) > 0 {
		t.Errorf("Close with the server gone and the hold lost tried writes %q and sent commands %q; want none", tried, sent)
	}
}

// TestStoreClosedUnderAnOpenClient: a store closed while its Client is
// open (a program closing them in the wrong order) ends the Client's
// calls with ErrClosed, the one closed error of the library, at once:
// they do not take the store's closed error for a passing failure and
// retry until their context ends.
func TestStoreClosedUnderAnOpenClient(t *testing.T) {
	ps := newProcs(t, 1)
	ctx := testCtx(t, time.Minute)
	if err := ps[0].b.s.Close(); err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := newMutex(t, ps[0].b.Client, "k").LockContext(lctx)
	if !errors.Is(err, dsync.ErrClosed) || lctx.Err() != nil {
		t.Errorf("LockContext on a closed store: %v (its context ended: %v), want ErrClosed at once", err, lctx.Err() != nil)
	}
}
