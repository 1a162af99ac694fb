package dsyncmongo

import (
	"errors"
	"testing"
	"time"

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
	// disconnect the test's other cleanups do.
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	ps := newProcs(t, 2)
	ctx := testCtx(t, time.Minute)
	holder := newMutex(t, ps[0].b, "k", dsync.WithTTL(time.Minute))
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	blocker := newMutex(t, ps[1].b, "j", dsync.WithTTL(time.Minute))
	if err := blocker.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waiting := newMutex(t, ps[0].b, "j", dsync.WithTTL(time.Minute))
	waited := make(chan error, 1)
	go func() { waited <- waiting.LockContext(ctx) }()
	taker := newMutex(t, ps[1].b, "k", dsync.WithTTL(time.Minute))
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
	if err := <-waited; !errors.Is(err, ErrClosed) {
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
