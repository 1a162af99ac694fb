package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// ValidUntil of a hold that ended without an unlock (stalled, revoked)
// is never in the future, however long the process's session goes on
// being renewed; and with a progress deadline, it is never later than
// the last report plus the deadline. A holder that checks
// time.Now().Before(ValidUntil()) before a write, as the documentation
// invites, must not write while another process holds the key.

// validPrimitive is what these tests use of a Mutex, an RWMutex (held
// for writing or reading) or a Semaphore.
type validPrimitive interface {
	ValidUntil() time.Time
	Lost() <-chan struct{}
}

// validKind makes a value of one primitive on c with opts, and takes a
// hold of it.
type validKind struct {
	name    string
	hold    func(t *testing.T, c *dsync.Client, opts ...dsync.Option) validPrimitive
	compete func(t *testing.T, c *dsync.Client) func() // a hold of another process; returns its release
}

func validKinds() []validKind {
	mutex := func(t *testing.T, c *dsync.Client, opts ...dsync.Option) *dsync.Mutex {
		t.Helper()
		m, err := dsync.NewMutex(c, "k", append([]dsync.Option{quiet}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	rwmutex := func(t *testing.T, c *dsync.Client, opts ...dsync.Option) *dsync.RWMutex {
		t.Helper()
		rw, err := dsync.NewRWMutex(c, "k", opts...)
		if err != nil {
			t.Fatal(err)
		}
		return rw
	}
	semaphore := func(t *testing.T, c *dsync.Client, opts ...dsync.Option) *dsync.Semaphore {
		t.Helper()
		s, err := dsync.NewSemaphore(c, "k", 1, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return []validKind{
		{"Mutex",
			func(t *testing.T, c *dsync.Client, opts ...dsync.Option) validPrimitive {
				m := mutex(t, c, opts...)
				m.Lock()
				return m
			},
			func(t *testing.T, c *dsync.Client) func() { m := mutex(t, c); m.Lock(); return m.Unlock }},
		{"RWMutex.Lock",
			func(t *testing.T, c *dsync.Client, opts ...dsync.Option) validPrimitive {
				rw := rwmutex(t, c, opts...)
				rw.Lock()
				return rw
			},
			func(t *testing.T, c *dsync.Client) func() { rw := rwmutex(t, c); rw.Lock(); return rw.Unlock }},
		{"RWMutex.RLock",
			func(t *testing.T, c *dsync.Client, opts ...dsync.Option) validPrimitive {
				rw := rwmutex(t, c, opts...)
				rw.RLock()
				return rw
			},
			func(t *testing.T, c *dsync.Client) func() { rw := rwmutex(t, c); rw.Lock(); return rw.Unlock }},
		{"Semaphore",
			func(t *testing.T, c *dsync.Client, opts ...dsync.Option) validPrimitive {
				s := semaphore(t, c, opts...)
				if err := s.Acquire(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
				return s
			},
			func(t *testing.T, c *dsync.Client) func() {
				s := semaphore(t, c)
				if err := s.Acquire(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
				return func() { s.Release(1) }
			}},
	}
}

// validTTL is these tests' TTL; validDeadline their progress deadline.
const (
	validTTL      = 3 * time.Second
	validDeadline = time.Second
)

// A stalled hold's ValidUntil is when it stalled, in the past, while the
// process's session, kept by a hold of another key, is renewed for
// several TTLs and another process holds the key.
func TestValidUntilOfAStalledHoldIsPast(t *testing.T) {
	for _, k := range validKinds() {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				a := newClient(t, store, dsync.ClientWithTTL(validTTL))
				b := newClient(t, store, dsync.ClientWithTTL(validTTL))
				other := newMutex(t, a, "other")
				other.Lock() // keeps a's session renewed after the stall
				defer other.Unlock()

				p := k.hold(t, a, dsync.WithProgressDeadline(validDeadline))
				start := time.Now()
				if got := p.ValidUntil(); got.After(start.Add(validDeadline)) {
					t.Errorf("ValidUntil is %v from the hold's start; want at most the progress deadline, %v", got.Sub(start), validDeadline)
				}
				await(t, "Lost", p.Lost())
				lostAt := time.Now()
				held := make(chan func(), 1)
				go func() { held <- k.compete(t, b) }()
				release := await(t, "the other process's hold", held)
				defer release()
				for range 3 {
					now := time.Now()
					if got := p.ValidUntil(); got.After(lostAt) {
						t.Errorf("%v after the stall, with another process holding the key, ValidUntil is %v in the future", now.Sub(lostAt), got.Sub(now))
					}
					time.Sleep(validTTL) // a's session is renewed meanwhile
				}
			})
		})
	}
}

// A revoked hold's ValidUntil is in the past once Lost() is closed,
// though the revoke comes well before its session's deadline.
func TestValidUntilOfARevokedHoldIsPast(t *testing.T) {
	for _, k := range validKinds() {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				seen := seeSessions(mem, 0, 0)
				a := newClient(t, seen, dsync.ClientWithTTL(validTTL))
				p := k.hold(t, a)
				time.Sleep(validTTL) // a few renewals
				seen.mu.Lock()
				id := seen.ids[0]
				seen.mu.Unlock()
				if err := mem.Roles().Revocations.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "stuck", At: mem.ServerTime().Latest}); err != nil {
					t.Fatal(err)
				}
				await(t, "Lost", p.Lost())
				if now, got := time.Now(), p.ValidUntil(); got.After(now) {
					t.Errorf("after the revoke, ValidUntil is %v in the future", got.Sub(now))
				}
			})
		})
	}
}
