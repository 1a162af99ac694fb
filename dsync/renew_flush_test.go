package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// TestRenewalIsNotHeldUpBySendingEndsAgain: a renewal the store confirms
// in time keeps the session's holds, even while the ends of unknown
// outcome the process has yet to land are not answered. They are sent
// again in the background; a renewal that waited for them before its
// confirmation counted was judged late (or its deadline passed first),
// and the session was retired with every hold in it. Seen in issue 45:
// seven partition members on FerretDB whose server stalled for a few
// seconds at their start had their renewals waiting on such ends while
// no shard was owned for over a minute.
func TestRenewalIsNotHeldUpBySendingEndsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		store := newGoneStore()
		c := newClient(t, store, dsync.ClientWithTTL(ttl))
		held := newMutex(t, c, "k")
		held.Lock()
		released := newMutex(t, c, "r")
		released.Lock()
		// Inserts (claims and end markers) go unanswered from now on;
		// renewals are answered at once.
		store.hang("Insert")
		store.hang("InsertOrdered")
		uctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := released.UnlockContext(uctx); err == nil {
			t.Fatal("Unlock succeeded although its end was not answered")
		}
		// The release's end is now of unknown outcome, to be sent again.
		select {
		case <-held.Lost():
			t.Fatal("the hold was lost although every renewal was answered at once")
		case <-time.After(5 * ttl):
		}
		store.comeBack()
		if err := held.UnlockContext(context.Background()); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	})
}
