package dsync_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// sentRenewals records when each renewal was sent to the store.
type sentRenewals struct {
	*memory.Store
	mu   sync.Mutex
	sent []time.Time
}

func (s *sentRenewals) RenewSession(ctx context.Context, session string, gen int, expires time.Time) (bool, error) {
	s.mu.Lock()
	s.sent = append(s.sent, time.Now())
	s.mu.Unlock()
	return s.Store.RenewSession(ctx, session, gen, expires)
}

// Roles: the store's, without the record of up-time (withoutUptime).
func (s *sentRenewals) Roles() driver.Roles { return withoutUptime(s.Store.Roles()) }

// TestNoRenewalPastTheDeadline: a holder whose timers all ran late (a
// pause, a suspend) must not renew once its local deadline has passed:
// it stopped relying on the session then, and a renewal sent later would
// raise the session's stored expiry to a TTL past its sending, past what
// the readers that found the session expired remember
// (statuspage.ClaimInfo.Expired: two TTLs past the expiry found), so that a Client's
// Queue that found the claim Expired reads it holding again, and waiters
// wait for a dead owner's claim. The session is over instead.
func TestNoRenewalPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The deadline is at 1.9 s, the stored expiry at 2 s. The first
		// renewal falls due at 0.67 s and its timer fires at 4.67 s; the
		// deadline timer at 5.9 s.
		const ttl = 2 * time.Second
		start := time.Now()
		store := &sentRenewals{Store: memory.New()}
		holder := newClient(t, store, dsync.ClientWithTTL(ttl), dsync.WithClock(laggingClock{lag: 4 * time.Second}))
		reader := newClient(t, store.Store, dsync.ClientWithTTL(ttl))
		other := newMutex(t, reader, "other") // the reader has claimed: its reads remember
		lockUnlock(other)
		m := newMutex(t, holder, "k")
		m.Lock()

		expired := func() bool {
			q, err := statuspage.NewReader(reader).Queue(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			return len(q) == 0 || q[0].Expired
		}
		time.Sleep(2500*time.Millisecond - time.Since(start))
		if !expired() {
			t.Fatal("the claim is not Expired at 2.5 s, past its session's expiry")
		}
		// The reader remembers that until 6 s (two TTLs past the expiry
		// found). No renewal may have raised the expiry past that.
		time.Sleep(6100*time.Millisecond - time.Since(start))
		if !expired() {
			t.Error("the claim read Expired at 2.5 s reads live again at 6.1 s")
		}
		store.mu.Lock()
		for _, at := range store.sent {
			if d := at.Sub(start); d >= 1900*time.Millisecond {
				t.Errorf("a renewal was sent at %v, past the local deadline (1.9 s)", d)
			}
		}
		store.mu.Unlock()
		select {
		case <-m.Lost():
		default:
			t.Error("Lost still open past the deadline")
		}
	})
}
