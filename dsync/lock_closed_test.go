package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// TestLockNeverReturnsWithoutTheLock: Lock, RLock and the Lock of
// RLocker have no error to return, so on a closed Client, whether closed
// before the call or while it waits, they panic with an error wrapping
// ErrClosed instead of returning as if they held; and they leave no hold,
// here (Token 0, unlocking panics) or in the store (another process takes
// the key at once).
func TestLockNeverReturnsWithoutTheLock(t *testing.T) {
	// A lockable is one of the methods, on a fresh primitive of key on b.
	type lockable struct {
		lock, unlock func()
		token        func() uint64
		owner        func() string
	}
	for _, m := range []struct {
		name string
		make func(t *testing.T, b *dsync.Client, key string) lockable
		// take takes key on b, as a holder the method must wait for.
		take func(t *testing.T, b *dsync.Client, key string) (release func())
		// try tries the key on b once, as another process would.
		try func(t *testing.T, b *dsync.Client) error
		// stored is the key as stored.
		stored string
	}{
		{
			name: "Mutex.Lock",
			make: func(t *testing.T, b *dsync.Client, key string) lockable {
				mu := newMutex(t, b, key)
				return lockable{mu.Lock, mu.Unlock, mu.Token, func() string { return dsync.Owner(mu) }}
			},
			take: func(t *testing.T, b *dsync.Client, key string) func() {
				mu := newMutex(t, b, key)
				mu.Lock()
				return mu.Unlock
			},
			try: func(t *testing.T, b *dsync.Client) error {
				return newMutex(t, b, "k").TryLockContext(context.Background())
			},
			stored: "k",
		},
		{
			name: "RWMutex.Lock",
			make: func(t *testing.T, b *dsync.Client, key string) lockable {
				rw := newRWMutex(t, b, key)
				return lockable{rw.Lock, rw.Unlock, rw.Token, func() string { return dsync.Owner(rw) }}
			},
			take:   takeRW,
			try:    tryRW,
			stored: "dsync:rw/k",
		},
		{
			name: "RWMutex.RLock",
			make: func(t *testing.T, b *dsync.Client, key string) lockable {
				rw := newRWMutex(t, b, key)
				return lockable{rw.RLock, rw.RUnlock, rw.Token, func() string { return dsync.Owner(rw) }}
			},
			take:   takeRW,
			try:    tryRW,
			stored: "dsync:rw/k",
		},
		{
			name: "RWMutex.RLocker",
			make: func(t *testing.T, b *dsync.Client, key string) lockable {
				rw := newRWMutex(t, b, key)
				l := rw.RLocker()
				return lockable{l.Lock, l.Unlock, rw.Token, func() string { return dsync.Owner(rw) }}
			},
			take:   takeRW,
			try:    tryRW,
			stored: "dsync:rw/k",
		},
	} {
		t.Run(m.name, func(t *testing.T) {
			for _, waits := range []bool{false, true} {
				when := "closed before the call"
				if waits {
					when = "closed while the call waits"
				}
				t.Run(when, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						store := memory.New()
						a, err := dsync.NewClient(store)
						if err != nil {
							t.Fatal(err)
						}
						b := newClient(t, store)
						l := m.make(t, a, "k")
						release := func() {}
						if waits {
							release = m.take(t, b, "k")
						}
						if !waits {
							if err := a.Close(); err != nil {
								t.Fatal(err)
							}
						}
						panicked := make(chan any, 1)
						go func() {
							defer func() { panicked <- recover() }()
							l.lock()
						}()
						if waits {
							time.Sleep(time.Second)
							select {
							case r := <-panicked:
								t.Fatalf("%s returned (panic %v) while another held the key", m.name, r)
							default:
							}
							if err := a.Close(); err != nil {
								t.Fatal(err)
							}
						}
						if err, _ := (<-panicked).(error); !errors.Is(err, dsync.ErrClosed) {
							t.Errorf("%s, %s: panic %v; want an error wrapping dsync.ErrClosed", m.name, when, err)
						}
						if tok := l.token(); tok != 0 {
							t.Errorf("%s, %s: Token %d after the panic; want 0, no hold", m.name, when, tok)
						}
						if r := panicValue(l.unlock); r == nil || !strings.Contains(fmt.Sprint(r), "nlock of unlocked") {
							t.Errorf("%s, %s: unlocking after the panic: panic %v; want the panic of unlocking what is not locked", m.name, when, r)
						}
						// Nor in the store: no claim of its owner is queued
						// for the key, and another process takes it before a
						// claim left behind could have expired (the TTL).
						release()
						q, err := statuspage.NewReader(b).Queue(context.Background(), m.stored)
						if err != nil {
							t.Fatal(err)
						}
						for _, c := range q {
							if c.Owner == l.owner() {
								t.Errorf("%s, %s: the store queues %+v, a claim of the closed Client's primitive", m.name, when, c)
							}
						}
						start := time.Now()
						for m.try(t, b) != nil {
							if time.Since(start) > dsync.DefaultTTL/2 {
								t.Fatalf("%s, %s: another process could not take the key within %v", m.name, when, time.Since(start))
							}
							time.Sleep(100 * time.Millisecond)
						}
					})
				})
			}
		})
	}
}

// takeRW write-locks key's RWMutex on b.
func takeRW(t *testing.T, b *dsync.Client, key string) func() {
	rw := newRWMutex(t, b, key)
	rw.Lock()
	return rw.Unlock
}

// tryRW tries to write-lock the RWMutex k on b.
func tryRW(t *testing.T, b *dsync.Client) error {
	return newRWMutex(t, b, "k").TryLockContext(context.Background())
}

// panicValue calls f and returns what it panicked with, nil if nothing.
func panicValue(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}
