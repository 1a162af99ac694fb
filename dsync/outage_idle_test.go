package dsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// TestLockAfterALateUnlockOfALostHold: a Client with an outage grace
// whose only hold stalled, unlocked only after its idle session's
// deadline passed, takes its next lock at once: the late Unlock judges
// the idle session over, and a session with nothing to keep is retired,
// not suspended. Suspended, no probe gave it a verdict, and the next Lock
// waited for the Keeper to give up on it, the grace and a TTL after the
// deadline (the public-API outage simulation found it: a waiter queued
// behind a stalled holder sent nothing for 3.6 s).
func TestLockAfterALateUnlockOfALostHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(1, outGrace)
		defer w.close()
		c := w.clients[0].Client
		stalls, err := dsync.NewMutex(c, "stalls", dsync.WithProgressDeadline(outTTL/3))
		if err != nil {
			t.Fatal(err)
		}
		if err := stalls.LockContext(w.ctx); err != nil {
			t.Fatal(err)
		}
		<-stalls.Lost() // no progress reported: the hold stalls
		if !errors.Is(stalls.Err(), dsync.ErrStalled) {
			t.Fatalf("Err() = %v; want ErrStalled", stalls.Err())
		}
		time.Sleep(3 * outTTL) // the session, idle, passes its deadline
		synctest.Wait()
		if err := stalls.UnlockContext(w.ctx); !errors.Is(err, dsync.ErrStalled) {
			t.Fatalf("the late unlock = %v; want ErrStalled", err)
		}
		next, err := dsync.NewMutex(c, "next")
		if err != nil {
			t.Fatal(err)
		}
		from := time.Now()
		ctx, cancel := context.WithTimeout(w.ctx, outGrace+2*outTTL)
		defer cancel()
		if err := next.LockContext(ctx); err != nil {
			t.Fatalf("the next lock: %v", err)
		}
		if took := time.Since(from); took >= outTTL {
			t.Fatalf("the next lock took %v on a store that answered; want it within a TTL (%v)", took, outTTL)
		}
		if err := next.UnlockContext(w.ctx); err != nil {
			t.Fatal(err)
		}
	})
}
