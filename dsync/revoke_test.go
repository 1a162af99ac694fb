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

// sessionsSeen records the sessions inserted through it.
type sessionsSeen struct {
	*memory.Store
	mu  sync.Mutex
	ids []string
}

func (s *sessionsSeen) InsertSession(ctx context.Context, sess driver.Session) error {
	s.mu.Lock()
	s.ids = append(s.ids, sess.ID)
	s.mu.Unlock()
	return s.Store.InsertSession(ctx, sess)
}

// TestRevokedHolderLosesWithinATTLAndTheWaiterWaitsForExpiry: once the
// holder's session is revoked in the store, its renewals match nothing,
// so its Lost closes within one TTL; a waiter in another process holds
// only once the session's lease has expired in store time, never at
// once.
func TestRevokedHolderLosesWithinATTLAndTheWaiterWaitsForExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		mem := memory.New()
		seen := &sessionsSeen{Store: mem}
		var logged syncBuffer
		logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		a := newMutex(t, newClient(t, seen, dsync.WithTTL(ttl), dsync.ClientWithLogger(logger)), "k")
		b := newMutex(t, newClient(t, mem, dsync.WithTTL(ttl)), "k")
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
		if err := mem.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "stuck", At: mem.ServerTime().Latest}); err != nil {
			t.Fatal(err)
		}
		sess, _, err := mem.GetSession(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-lost:
			t.Fatal("Lost closed at the revoke itself")
		default:
		}
		time.Sleep(ttl)
		select {
		case <-lost:
		default:
			t.Fatalf("Lost still open %v after the revoke", time.Since(revokedAt))
		}
		if err := a.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("Unlock after the revoke = %v; want ErrLost", err)
		}
		at := <-heldAt
		if at.Before(sess.ExpiresAt) {
			t.Errorf("the waiter held at %v, before the revoked lease expired at %v", at, sess.ExpiresAt)
		}
		synctest.Wait()
		if log := logged.String(); !strings.Contains(log, "revoked") || !strings.Contains(log, "by=test") || !strings.Contains(log, "reason=stuck") {
			t.Errorf("the revoked process logged %q; want a warning with who and why", log)
		}
		// No renewal raised the expiry after the revoke.
		if after, _, _ := mem.GetSession(context.Background(), id); !after.ExpiresAt.Equal(sess.ExpiresAt) {
			t.Errorf("expiry moved from %v to %v after the revoke", sess.ExpiresAt, after.ExpiresAt)
		}
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
