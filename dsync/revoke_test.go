package dsync_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// sessionsSeen records the sessions inserted through it, and counts the
// renewals and the reads of revocations made through it; each renewal
// takes renewTakes, each read readTakes.
type sessionsSeen struct {
	*memory.Store
	renewTakes, readTakes time.Duration
	mu                    sync.Mutex
	ids                   []string
	renewals, checks      int
}

// seeSessions returns a view of mem that sees the sessions and the reads
// of revocations, each renewal taking renewTakes and each read readTakes.
func seeSessions(mem *memory.Store, renewTakes, readTakes time.Duration) *sessionsSeen {
	s := &sessionsSeen{renewTakes: renewTakes, readTakes: readTakes}
	s.Store = mem.Intercept(s.see)
	return s
}

func (s *sessionsSeen) see(_ context.Context, c memory.Call, _ func() error) error {
	switch c.Op {
	case "InsertSession":
		s.mu.Lock()
		s.ids = append(s.ids, c.Session.ID)
		s.mu.Unlock()
	case "RenewSession", "RenewSessionUp":
		time.Sleep(s.renewTakes)
		s.mu.Lock()
		s.renewals++
		s.mu.Unlock()
	case "Revoked":
		time.Sleep(s.readTakes)
		s.mu.Lock()
		s.checks++
		s.mu.Unlock()
	}
	return nil
}

func (s *sessionsSeen) counts() (renewals, checks int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals, s.checks
}

// TestRevokedHolderLosesWithinATTLAndTheWaiterWaitsForExpiry: the revoke
// writes only its record; the holder reads it and retires its session,
// so its Lost closes within one TTL (two thirds of a TTL here, with no
// latency)
// and its Unlock reports ErrLost and ErrRevoked; a waiter in another
// process holds only once the session's lease has expired in store time,
// never at once.
func TestRevokedHolderLosesWithinATTLAndTheWaiterWaitsForExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		mem := memory.New()
		seen := seeSessions(mem, 0, 0)
		var logged syncBuffer
		logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		a := newMutex(t, newClient(t, seen, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(logger)), "k")
		b := newMutex(t, newClient(t, mem, dsync.ClientWithTTL(ttl)), "k")
		a.Lock()
		lost := a.Lost()
		time.Sleep(ttl) // a few renewals
		seen.mu.Lock()
		id := seen.ids[0]
		seen.mu.Unlock()

		heldAt := make(chan time.Time, 1)
		go func() {
			b.Lock()
			heldAt <- mem.ServerTime().Earliest
			b.Unlock()
		}()
		synctest.Wait()
		revokedAt := time.Now()
		if err := mem.Roles().Revocations.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "stuck", At: mem.ServerTime().Latest}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lost:
		case <-time.After(ttl):
			_ = a.UnlockContext(context.Background()) // lets the waiter and the bubble end
			t.Fatalf("Lost still open %v after the revoke", time.Since(revokedAt))
		}
		if d := time.Since(revokedAt); d > 2*ttl/3 {
			t.Errorf("Lost closed %v after the revoke; want within two thirds of a TTL (%v) with no latency", d, 2*ttl/3)
		}
		err := a.UnlockContext(context.Background())
		if !errors.Is(err, dsync.ErrLost) || !errors.Is(err, dsync.ErrRevoked) || !strings.Contains(err.Error(), "by test") || !strings.Contains(err.Error(), "stuck") {
			t.Errorf("Unlock after the revoke = %v; want ErrLost and ErrRevoked, with who and why", err)
		}
		at := <-heldAt
		// The stored expiry only grows: read after the waiter held, it
		// is at least what it was then.
		sess, _, err := mem.GetSession(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if at.Before(sess.ExpiresAt) {
			t.Errorf("the waiter held at %v, before the revoked lease expired at %v", at, sess.ExpiresAt)
		}
		synctest.Wait()
		if log := logged.String(); !strings.Contains(log, "revoked") || !strings.Contains(log, "by=test") || !strings.Contains(log, "reason=stuck") {
			t.Errorf("the revoked process logged %q; want a warning with who and why", log)
		}
	})
}

// TestRevokeCheckCost: a process holding a lock reads its revocation
// once per two thirds of a TTL, beside its renewals (one per third of a
// TTL by default): over 10 TTLs, 15 reads (give or take one at each end)
// and 30 renewals; then, holding nothing, none. The figures
// docs/operations.md states.
func TestRevokeCheckCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		seen := seeSessions(memory.New(), 0, 0)
		m := newMutex(t, newClient(t, seen, dsync.ClientWithTTL(ttl)), "k")
		m.Lock()
		synctest.Wait()
		r0, c0 := seen.counts()
		time.Sleep(10 * ttl)
		synctest.Wait()
		r1, c1 := seen.counts()
		m.Unlock()
		synctest.Wait()
		_, c2 := seen.counts()
		time.Sleep(10 * ttl)
		synctest.Wait()
		if _, c3 := seen.counts(); c3 != c2 {
			t.Errorf("%d revocation reads over 10 TTLs of an idle process; want none", c3-c2)
		}
		renewals, checks := r1-r0, c1-c0
		t.Logf("over 10 TTLs: %d renewals, %d revocation reads", renewals, checks)
		if checks < 14 || checks > 16 {
			t.Errorf("%d revocation reads over 10 TTLs; want 15 (one per two thirds of a TTL)", checks)
		}
		if renewals < 29 || renewals > 31 {
			t.Errorf("%d renewals over 10 TTLs; want 30 (one per third of a TTL)", renewals)
		}
	})
}

// TestRevokeOfAWaitingSessionWithdrawsIt: a process revoked while it only
// waits gives its claim up within two TTLs of the revoke (its checks'
// period while it only waits) and goes on in a new session, and the
// holder is not disturbed.
func TestRevokeOfAWaitingSessionWithdrawsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		mem := memory.New()
		seen := seeSessions(mem, 0, 0)
		a := newMutex(t, newClient(t, mem, dsync.ClientWithTTL(ttl)), "k")
		b := newMutex(t, newClient(t, seen, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(slog.New(slog.DiscardHandler))), "k")
		a.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*ttl)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- b.LockContext(ctx) }()
		synctest.Wait()
		seen.mu.Lock()
		id := seen.ids[0]
		seen.mu.Unlock()
		if err := mem.Roles().Revocations.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "r"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * ttl)
		synctest.Wait()
		select {
		case <-a.Lost():
			t.Fatal("the holder lost its hold when the waiter's session was revoked")
		default:
		}
		a.Unlock()
		// The waiter's claim was withdrawn with the revoked session; its
		// Lock goes on in a new session and holds.
		if err := <-done; err != nil {
			t.Fatalf("the waiter's LockContext = %v; want it to hold in a new session", err)
		}
		seen.mu.Lock()
		n := len(seen.ids)
		seen.mu.Unlock()
		if n < 2 {
			t.Errorf("the waiter held in %d session(s); want a new one after the revoke", n)
		}
		b.Unlock()
	})
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestRevokeSeenWhileRenewalsAreSlow: a revoke check that falls due while
// a renewal is under way is not held up by it, so a revoked holder's Lost
// closes within two thirds of a TTL plus the read's round trip, however
// long renewals take. Renewals of 1.4 s back to back (TTL 3 s) held the
// check up until one was back: Lost closed up to 2.75 s after the
// revoke, beyond the bound. The revoke comes at twenty points 150 ms apart, over
// the checks' cycle (two renewals, 2.8 s, before the fix).
func TestRevokeSeenWhileRenewalsAreSlow(t *testing.T) {
	const (
		ttl        = 3 * time.Second
		renewTakes = 1400 * time.Millisecond
		readTakes  = 500 * time.Millisecond
	)
	var worst time.Duration
	for i := range 20 {
		synctest.Test(t, func(t *testing.T) {
			mem := memory.New()
			store := seeSessions(mem, renewTakes, readTakes)
			m := newMutex(t, newClient(t, store, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(slog.New(slog.DiscardHandler))), "k")
			m.Lock()
			time.Sleep(2*ttl + time.Duration(i)*150*time.Millisecond)
			store.mu.Lock()
			id := store.ids[0]
			store.mu.Unlock()
			revokedAt := time.Now()
			if err := mem.Roles().Revocations.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "slow"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-m.Lost():
			case <-time.After(3 * ttl):
				t.Fatalf("Lost still open %v after the revoke", time.Since(revokedAt))
			}
			worst = max(worst, time.Since(revokedAt))
			_ = m.UnlockContext(context.Background())
		})
	}
	t.Logf("Lost closed at most %v after the revoke", worst)
	if want := 2*ttl/3 + readTakes; worst > want {
		t.Errorf("Lost closed up to %v after the revoke, with renewals of %v; want within two thirds of a TTL and a read (%v)", worst, renewTakes, want)
	}
}

// TestRevokeSeenWhenRelockedDuringASlowRenewal: a process whose hold ends
// while a renewal is under way, and that locks again before the renewal
// is back, still has its revoke checks on time. The keeper's loop, idle,
// waited for the renewal alone, and the check that fell due meanwhile
// started only once the renewal was back: Lost closed 2.55 s after the
// revoke (TTL 3 s, renewals 1.4 s, reads instant; bound 2 s).
func TestRevokeSeenWhenRelockedDuringASlowRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		mem := memory.New()
		store := seeSessions(mem, 1400*time.Millisecond, 0)
		m := newMutex(t, newClient(t, store, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(slog.New(slog.DiscardHandler))), "k")
		start := time.Now()
		m.Lock()
		// Renewals run back to back from 1 s (1.0–2.4, 2.4–3.8, 3.8–5.2,
		// 5.2–6.6 s); checks at 2 and 4 s. The revoke comes just after
		// the second, so the next is due at 6.05 s.
		time.Sleep(4050 * time.Millisecond)
		store.mu.Lock()
		id := store.ids[0]
		store.mu.Unlock()
		revokedAt := time.Now()
		if err := mem.Roles().Revocations.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "slow"}); err != nil {
			t.Fatal(err)
		}
		// Unlock and lock again during the renewal of 5.2–6.6 s.
		time.Sleep(5500*time.Millisecond - time.Since(start))
		_ = m.UnlockContext(context.Background())
		synctest.Wait()
		m.Lock()
		select {
		case <-m.Lost():
		case <-time.After(3 * ttl):
			t.Fatalf("Lost still open %v after the revoke", time.Since(revokedAt))
		}
		if d, want := time.Since(revokedAt), 2*ttl/3; d > want {
			t.Errorf("Lost closed %v after the revoke, the hold taken again during a slow renewal; want within two thirds of a TTL (%v), reads being instant", d, want)
		}
		_ = m.UnlockContext(context.Background())
	})
}
