package dsync_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// Every method of a zero Mutex, RWMutex, Semaphore or Once, or of a nil
// pointer to one, panics at once, naming the New function, instead of
// blocking forever (a zero Mutex's Lock waited on a nil channel) or
// answering as if nothing were wrong.
func TestZeroValuesPanic(t *testing.T) {
	ctx := context.Background()
	f := func(context.Context) error { return nil }
	type call struct {
		name string
		do   func()
	}
	calls := map[string][]call{}
	for _, m := range []*dsync.Mutex{new(dsync.Mutex), nil} {
		calls["Mutex"] = append(calls["Mutex"],
			call{"Key", func() { m.Key() }},
			call{"Lock", func() { m.Lock() }},
			call{"LockContext", func() { _ = m.LockContext(ctx) }},
			call{"TryLock", func() { m.TryLock() }},
			call{"TryLockContext", func() { _ = m.TryLockContext(ctx) }},
			call{"Unlock", func() { m.Unlock() }},
			call{"UnlockContext", func() { _ = m.UnlockContext(ctx) }},
			call{"Lost", func() { m.Lost() }},
			call{"Token", func() { m.Token() }},
			call{"ValidUntil", func() { m.ValidUntil() }},
		)
	}
	for _, rw := range []*dsync.RWMutex{new(dsync.RWMutex), nil} {
		calls["RWMutex"] = append(calls["RWMutex"],
			call{"Key", func() { rw.Key() }},
			call{"Lock", func() { rw.Lock() }},
			call{"LockContext", func() { _ = rw.LockContext(ctx) }},
			call{"TryLock", func() { rw.TryLock() }},
			call{"TryLockContext", func() { _ = rw.TryLockContext(ctx) }},
			call{"Unlock", func() { rw.Unlock() }},
			call{"UnlockContext", func() { _ = rw.UnlockContext(ctx) }},
			call{"RLock", func() { rw.RLock() }},
			call{"RLockContext", func() { _ = rw.RLockContext(ctx) }},
			call{"TryRLock", func() { rw.TryRLock() }},
			call{"TryRLockContext", func() { _ = rw.TryRLockContext(ctx) }},
			call{"RUnlock", func() { rw.RUnlock() }},
			call{"RUnlockContext", func() { _ = rw.RUnlockContext(ctx) }},
			call{"RLocker", func() { rw.RLocker() }},
			call{"Lost", func() { rw.Lost() }},
			call{"Token", func() { rw.Token() }},
			call{"ValidUntil", func() { rw.ValidUntil() }},
		)
	}
	for _, s := range []*dsync.Semaphore{new(dsync.Semaphore), nil} {
		calls["Semaphore"] = append(calls["Semaphore"],
			call{"Key", func() { s.Key() }},
			call{"Acquire", func() { _ = s.Acquire(ctx, 1) }},
			call{"Acquire(0)", func() { _ = s.Acquire(ctx, 0) }},
			call{"TryAcquire", func() { s.TryAcquire(1) }},
			call{"TryAcquireContext", func() { _ = s.TryAcquireContext(ctx, 1) }},
			call{"Release", func() { s.Release(1) }},
			call{"Release(0)", func() { s.Release(0) }},
			call{"ReleaseContext", func() { _ = s.ReleaseContext(ctx, 1) }},
			call{"Lost", func() { s.Lost() }},
			call{"Token", func() { s.Token() }},
			call{"ValidUntil", func() { s.ValidUntil() }},
		)
	}
	for _, o := range []*dsync.Once{new(dsync.Once), nil} {
		calls["Once"] = append(calls["Once"],
			call{"Key", func() { o.Key() }},
			call{"Done", func() { _, _ = o.Done(ctx) }},
			call{"Do", func() { _ = o.Do(ctx, f) }},
			call{"Do(nil)", func() { _ = o.Do(ctx, nil) }},
		)
	}
	for kind, cs := range calls {
		want := fmt.Sprintf("dsync: %s used without New%s", kind, kind)
		for i, c := range cs {
			zero := "zero"
			if i >= len(cs)/2 {
				zero = "nil"
			}
			t.Run(kind+"/"+zero+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					got := make(chan any, 1)
					go func() {
						defer func() { got <- recover() }()
						c.do()
					}()
					select {
					case r := <-got:
						if r != want {
							t.Errorf("%s of a %s %s: panic %v, want %q", c.name, zero, kind, r, want)
						}
					case <-time.After(time.Hour):
						t.Fatalf("%s of a %s %s blocked, want the panic %q", c.name, zero, kind, want)
					}
				})
			})
		}
	}
}
