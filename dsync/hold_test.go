package dsync

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestHoldDoesNotJoinARetiredSession: once a session is retired (its
// deadline passed, or the backend forgot it), others may have judged its
// claims dead and moved past them, so a claim of it that the backend
// reports as holding must not become a hold; the next claim gets a new
// session.
func TestHoldDoesNotJoinARetiredSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := NewMutex(NewMemClient(ClientWithTTL(time.Second)).Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		k := m.client.keeper
		s, err := k.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		k.Retire(s, ErrLost)
		h := &hold{p: &m.core, claim: queue.Ref{Key: "k", Epoch: 1}, lost: make(chan struct{}), keeper: k, sess: s}
		if k.Join(h, s) {
			t.Fatal("a hold joined a retired session")
		}
		if h.active() {
			t.Fatal("a hold of a retired session is active")
		}
		s2, err := k.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s2 == s || s2.ID() == s.ID() {
			t.Fatal("a claim after the retirement got the retired session")
		}
		c2, err := m.client.claim(context.Background(), m.stored, m.owner, s2.ID(), "", queue.ExclusiveTerms, true)
		if err != nil {
			t.Fatal(err)
		}
		h2 := &hold{p: &m.core, claim: c2, lost: make(chan struct{}), keeper: k, sess: s2}
		if !k.Join(h2, s2) || !h2.active() {
			t.Fatal("a hold could not join a live session")
		}
		h2.end()
		k.Remove(h2)
	})
}

// TestUnlockWhileTheSessionIsBeingRetired: the session's deadline timer
// and a late Unlock may run together after a pause. Once the timer's
// goroutine has retired the session, and before it reports the loss of
// the session's holds, Unlock must already report the hold lost (the
// integration suite's SIGSTOP before Unlock found the window).
func TestUnlockWhileTheSessionIsBeingRetired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := NewMutex(NewMemClient(ClientWithTTL(time.Second)).Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		m.Lock()
		h := m.hold
		// The first half of retire: the session is retired; the loss of
		// its holds is not reported yet.
		lost := h.keeper.RetireUntold(h.sess, ErrLost)
		select {
		case <-m.Lost():
		default:
			t.Error("the hold's Lost channel stayed open")
		}
		if err := m.UnlockContext(context.Background()); !errors.Is(err, ErrLost) {
			t.Fatalf("UnlockContext while the session was being retired = %v, want ErrLost", err)
		}
		lease.TellLost(lost)
	})
}

// TestLostOnceTheSessionIsRetired: the Lost channel of an RWMutex or a
// Semaphore, whose holds share one loss signal, is closed as soon as the
// session of one of its holds is retired, before the goroutine that
// retired it reports the loss (onLost): a caller that checks Lost after a
// pause, before acting, must not find it open.
func TestLostOnceTheSessionIsRetired(t *testing.T) {
	tests := []struct {
		name string
		// lock locks a primitive on b and returns its Lost and its holds.
		lock func(t *testing.T, b *Client) (lost func() <-chan struct{}, holds *holdSet)
	}{
		{"RWMutex", func(t *testing.T, b *Client) (func() <-chan struct{}, *holdSet) {
			rw, err := NewRWMutex(b, "k")
			if err != nil {
				t.Fatal(err)
			}
			rw.RLock()
			return rw.Lost, &rw.holds
		}},
		{"Semaphore", func(t *testing.T, b *Client) (func() <-chan struct{}, *holdSet) {
			s, err := NewSemaphore(b, "k", 3)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Acquire(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
			return s.Lost, &s.holds
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewMemClient(ClientWithTTL(time.Second))
				lost, holds := tt.lock(t, b.Client)
				h, ok := holds.newest()
				if !ok {
					t.Fatal("no hold counted after the lock")
				}
				told := h.keeper.RetireUntold(h.sess, ErrLost)
				select {
				case <-lost():
				default:
					t.Error("Lost open once the session was retired, before the loss was reported")
				}
				lease.TellLost(told)
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
