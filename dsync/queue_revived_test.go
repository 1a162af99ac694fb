package dsync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
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
		h := newClient(t, cut, dsync.ClientWithTTL(ttl), dsync.ClientWithOutageGrace(0)) // judged by its expiry
		m := newMutex(t, h, "k")
		m.Lock()
		reader := newClient(t, mem)

		cut.renewDown.Store(true)
		<-m.Lost()
		var q []statuspage.ClaimInfo
		for { // until the holder's session expires in the store
			var err error
			if q, err = statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 1 {
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
		q, err := statuspage.NewReader(reader).Queue(ctx, "k")
		if err != nil || len(q) != 1 || !q[0].Expired || q[0].Holds {
			t.Fatalf("Queue(k) after a late renewal revived the expired session = %+v, %v; want its claim still Expired", q, err)
		}
		reported := q[0].ExpiresAt
		// A reader that never saw it expired reads the store as it is:
		// alive until the late renewal's expiry (the claimers' dead
		// marker is what ends it for everyone).
		if q, err := statuspage.NewReader(newClient(t, mem)).Queue(ctx, "k"); err != nil || len(q) != 1 || q[0].Expired {
			t.Fatalf("a fresh reader's Queue(k) = %+v, %v; want the revived claim live", q, err)
		}
		// The record lasts as long as a late write can matter: two TTLs
		// past the highest expiry a read that reported the claim Expired
		// found (the late renewal's, here: see
		// TestQueueExpiredLastsPastTheExpiryReported). A session raised
		// past that (which no renewal sent in time can do) reads as it is
		// stored.
		time.Sleep(reported.Add(2 * ttl).Sub(mem.ServerTime().Earliest))
		if found, err := mem.RenewSession(ctx, q[0].Session, 0, mem.ServerTime().Latest.Add(10*ttl)); err != nil || !found {
			t.Fatalf("renewal of %s: found %v, %v", q[0].Session, found, err)
		}
		if q, err := statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 1 || q[0].Expired {
			t.Fatalf("Queue(k) two TTLs past the expiry it found = %+v, %v; want the claim as stored, live", q, err)
		}
	})
}

// emptiedSessions is a store whose sessions collection was emptied once
// gone is set: every session reads missing.
type emptiedSessions struct {
	*memory.Store
	gone atomic.Bool
}

func (s *emptiedSessions) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	if s.gone.Load() {
		return driver.Session{}, false, nil
	}
	return s.Store.GetSession(ctx, id)
}

// TestQueueExpiredLastsPastTheExpiryReported: a read that reports a claim
// Expired from the Client's memory, with the expiry a late renewal raised
// (ExpiresAt), promises what any read that found it Expired does: the
// Client's later reads report it Expired for two TTLs past that expiry,
// not only past the lower one its first read found. Past that first
// one's two TTLs, a session found missing (the sessions collection
// emptied) is not Expired by the store alone, so a Client that forgot it
// read the dead claim live again, and holding.
func TestQueueExpiredLastsPastTheExpiryReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		cut := newFlaky(mem)
		const ttl = 2 * time.Second
		m := newMutex(t, newClient(t, cut, dsync.ClientWithTTL(ttl), dsync.ClientWithOutageGrace(0)), "k") // judged by its expiry
		m.Lock()
		rs := &emptiedSessions{Store: mem}
		reader := newClient(t, rs)
		other := newMutex(t, reader, "other") // the reader has claimed: its reads remember
		lockUnlock(other)

		cut.renewDown.Store(true)
		<-m.Lost()
		var q []statuspage.ClaimInfo
		for {
			var err error
			if q, err = statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 1 {
				t.Fatalf("Queue(k) = %+v, %v; want the holder's claim", q, err)
			}
			if q[0].Expired {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		first := q[0].ExpiresAt
		// A renewal sent before the holder's deadline lands late.
		if found, err := mem.RenewSession(ctx, q[0].Session, 0, first.Add(ttl/2)); err != nil || !found {
			t.Fatalf("late renewal of %s: found %v, %v", q[0].Session, found, err)
		}
		q, err := statuspage.NewReader(reader).Queue(ctx, "k")
		if err != nil || len(q) != 1 || !q[0].Expired || !q[0].ExpiresAt.Equal(first.Add(ttl/2)) {
			t.Fatalf("Queue(k) after the late renewal = %+v, %v; want its claim Expired, with the raised expiry", q, err)
		}
		reported := q[0].ExpiresAt
		rs.gone.Store(true) // the sessions collection emptied
		time.Sleep(reported.Add(2 * ttl).Add(-100 * time.Millisecond).Sub(mem.ServerTime().Latest))
		if q, err := statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 1 || !q[0].Expired || q[0].Holds {
			t.Fatalf("Queue(k) within two TTLs of the expiry reported Expired = %+v, %v; want the claim Expired", q, err)
		}
	})
}
