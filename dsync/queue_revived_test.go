package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestQueueKeepsAnExpiredClaimExpired: once a Client's Queue found a
// claim's session expired, its later reads report the claim Expired even
// after a renewal that its owner sent before its deadline lands late and
// raises the stored expiry. The owner lost the hold at its deadline, so
// the session's claims are over whatever the store says now; reading it
// alive again, a reader named the ended claim holding after it had named
// the next one (an election observer's poll went back from token N+1 to
// N in the integration soak).
func TestQueueKeepsAnExpiredClaimExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		cut := newFlaky(mem) // renewals cut off at will
		const ttl = 2 * time.Second
		h := newClient(t, cut, dsync.WithTTL(ttl))
		m := newMutex(t, h, "k")
		m.Lock()
		reader := newClient(t, mem)

		cut.renewDown.Store(true)
		<-m.Lost()
		var q []dsync.ClaimInfo
		for { // until the holder's session expires in the store
			var err error
			if q, err = reader.Queue(ctx, "k"); err != nil || len(q) != 1 {
				t.Fatalf("Queue(k) = %+v, %v; want the holder's claim", q, err)
			}
			if q[0].Expired {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		// The renewal the holder sent before its deadline lands now, with
		// the expiry it asked for: less than a TTL past the one it had.
		expired := q[0].ExpiresAt
		if found, err := mem.RenewSession(ctx, q[0].Session, 0, expired.Add(ttl/2)); err != nil || !found {
			t.Fatalf("late renewal of %s: found %v, %v", q[0].Session, found, err)
		}
		q, err := reader.Queue(ctx, "k")
		if err != nil || len(q) != 1 || !q[0].Expired || q[0].Holds {
			t.Fatalf("Queue(k) after a late renewal revived the expired session = %+v, %v; want its claim still Expired", q, err)
		}
		// A reader that never saw it expired reads the store as it is:
		// alive until the late renewal's expiry (the claimers' dead
		// marker is what ends it for everyone).
		if q, err := newClient(t, mem).Queue(ctx, "k"); err != nil || len(q) != 1 || q[0].Expired {
			t.Fatalf("a fresh reader's Queue(k) = %+v, %v; want the revived claim live", q, err)
		}
		// The record lasts as long as a late write can matter: two TTLs
		// past the expiry found. A session raised past that (which no
		// renewal sent in time can do) reads as it is stored.
		time.Sleep(expired.Add(2 * ttl).Sub(mem.ServerTime().Earliest))
		if found, err := mem.RenewSession(ctx, q[0].Session, 0, mem.ServerTime().Latest.Add(10*ttl)); err != nil || !found {
			t.Fatalf("renewal of %s: found %v, %v", q[0].Session, found, err)
		}
		if q, err := reader.Queue(ctx, "k"); err != nil || len(q) != 1 || q[0].Expired {
			t.Fatalf("Queue(k) two TTLs past the expiry it found = %+v, %v; want the claim as stored, live", q, err)
		}
	})
}
