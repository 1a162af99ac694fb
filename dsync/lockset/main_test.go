package lockset_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/lockset"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// client returns a Client on store, closed when the test ends.
func client(t *testing.T, store driver.Store, opts ...dsync.ClientOption) *dsync.Client {
	t.Helper()
	quiet := dsync.ClientWithLogger(slog.New(slog.DiscardHandler))
	c, err := dsync.NewClient(store, append([]dsync.ClientOption{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mutex returns a Mutex of key on c.
func mutex(t *testing.T, c *dsync.Client, key string, opts ...dsync.Option) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(c, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rwmutex returns an RWMutex of key on c.
func rwmutex(t *testing.T, c *dsync.Client, key string) *dsync.RWMutex {
	t.Helper()
	rw, err := dsync.NewRWMutex(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// newSet returns a Set of members on c.
func newSet(t *testing.T, c *dsync.Client, members ...lockset.Member) *lockset.Set {
	t.Helper()
	s, err := lockset.New(c, members)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustLock locks s, failing the test if it does not hold.
func mustLock(t *testing.T, s *lockset.Set) {
	t.Helper()
	if err := s.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// takeAll checks that c takes every key of keys at once: each try holds,
// so that no claim holds or waits at any of them. It releases them.
func takeAll(t *testing.T, c *dsync.Client, keys ...string) {
	t.Helper()
	for _, k := range keys {
		m := mutex(t, c, k)
		if err := m.TryLockContext(context.Background()); err != nil {
			t.Errorf("another Client cannot take %q at once: %v", k, err)
			continue
		}
		m.Unlock()
	}
}

// heldErrorKey is the key a *dsync.HeldError names, "" if err is none.
func heldErrorKey(err error) string {
	var he *dsync.HeldError
	if errors.As(err, &he) {
		return he.Key
	}
	return ""
}
