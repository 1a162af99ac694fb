package dsync_test

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestCutAloneTakenOverAtExpiry: a holder cut off alone, its Client with
// an outage grace, is taken over about when its session expires, as
// without a grace, not up to a third of a TTL later.
// Its session's expiry is proven past only by a stamp the store applied
// after it (queue's doc_outage.go); the waiter's Client renews at once to
// get one (Keeper.Stamp) instead of waiting for its renewal's schedule.
// The waiter started a sixth of a TTL after the holder, so its own
// renewals fall midway between the holder's: without the stamp on demand
// it takes over an eighth of a TTL or more after the expiry.
func TestCutAloneTakenOverAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(2, outGrace)
		defer w.close()
		a, b := newMutex(t, w.clients[0].Client, "k"), newMutex(t, w.clients[1].Client, "k")
		a.Lock()
		time.Sleep(outTTL / 6)
		waiter := locker(w.ctx, b)
		time.Sleep(2 * outTTL)
		synctest.Wait()

		w.clients[0].Proc.SetReachable(false)
		deadline := a.ValidUntil()
		expiry := deadline.Add(outTTL / 20) // ValidUntil leaves the safety margin, TTL/20
		awaitLocked(t, waiter, 4*outTTL, "the waiter did not take over from a holder cut off alone")
		took := time.Now()
		if took.Before(deadline) {
			t.Fatalf("taken over %v before the holder's deadline", deadline.Sub(took))
		}
		if late := took.Sub(expiry); late > outTTL/16 {
			t.Errorf("taken over %v after the holder's session expired; want within TTL/16 (%v)", late, outTTL/16)
		}
		t.Logf("taken over %v after the holder's session expired (TTL %v)", took.Sub(expiry), outTTL)
		b.Unlock()
	})
}
