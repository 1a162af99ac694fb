package dsync_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// TestSpanHoldsAcrossAnEmptying: a process runs with buckets of a minute;
// the store is emptied while nothing is held; a process started then with
// the default span (five minutes) and the running one lock the same key.
// They must never both hold: whichever records its span in the emptied
// store first is the store's, and the other's Lock fails, saying so.
func TestSpanHoldsAcrossAnEmptying(t *testing.T) {
	const ttl = 10 * time.Second
	for _, tc := range []struct {
		name string
		// newcomerFirst: the process started after the emptying records
		// its span (by locking another key) before the running one
		// locks; otherwise the running one locks first.
		newcomerFirst bool
	}{
		{"the newcomer records its span first", true},
		{"the running process locks first", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				a := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(ttl))
				defer a.Close()
				ma := newMutex(t, a.Client, "job")
				ma.Lock()
				//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
				ma.Unlock()

				store.Reset() // an operator empties the collections: nothing is held
				c := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
				defer c.Close()
				mc := newMutex(t, c.Client, "job")
				if tc.newcomerFirst {
					other := newMutex(t, c.Client, "cron")
					other.Lock()
					//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
					other.Unlock()
				}

				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				errA := ma.LockContext(ctx)
				time.Sleep(1100 * time.Millisecond)
				cctx, ccancel := context.WithTimeout(ctx, 3*ttl)
				defer ccancel()
				errC := mc.LockContext(cctx)
				if errA == nil && errC == nil {
					lost := func(m *dsync.Mutex) bool {
						select {
						case <-m.Lost():
							return true
						default:
							return false
						}
					}
					t.Fatalf("both processes hold job (tokens %d and %d; lost: %v, %v)", ma.Token(), mc.Token(), lost(ma), lost(mc))
				}
				if errA == nil {
					// The running process's span is the store's: the
					// newcomer adopted it, and waits its turn.
					if !errors.Is(errC, context.DeadlineExceeded) {
						t.Fatalf("the newcomer's Lock while the other holds: %v, want it to wait", errC)
					}
					ma.Unlock()
					if err := mc.LockContext(ctx); err != nil {
						t.Fatalf("the newcomer's Lock after the holder's Unlock: %v", err)
					}
					mc.Unlock()
					return
				}
				if !errors.Is(errA, dsync.ErrSpan) || errC != nil {
					t.Fatalf("Lock of the process of a minute: %v; the newcomer's: %v; want the first refused (dsync.ErrSpan) and the second held", errA, errC)
				}
				mc.Unlock()
			})
		})
	}
}

// TestSpanMismatchFailsAtOnce: a process configured with a bucket span
// other than the one its store records fails every acquire at once, with
// an error that names both spans and the option to change, instead of
// retrying until its context ends; Lock and RLock, which have no error to
// return, panic with it.
func TestSpanMismatchFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(10*time.Second))
		defer a.Close()
		newMutex(t, a.Client, "job").Lock() // records a minute

		b := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(5*time.Minute), dsync.ClientWithTTL(10*time.Second))
		defer b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		check := func(what string, err error) {
			t.Helper()
			switch {
			case !errors.Is(err, dsync.ErrSpan):
				t.Errorf("%s: %v, want an error wrapping dsync.ErrSpan", what, err)
			case ctx.Err() != nil:
				t.Errorf("%s returned once its context ended: %v", what, err)
			case !strings.Contains(err.Error(), "the store uses 1m0s, this process 5m0s") || !strings.Contains(err.Error(), "ClientWithBucketSpan"):
				t.Errorf("%s: %q, want it to name both spans and the option", what, err)
			}
		}
		m := newMutex(t, b.Client, "other")
		check("LockContext", m.LockContext(ctx))
		check("TryLockContext", m.TryLockContext(ctx))
		rw, err := dsync.NewRWMutex(b.Client, "other", quiet)
		if err != nil {
			t.Fatal(err)
		}
		check("RWMutex.RLockContext", rw.RLockContext(ctx))
		sem, err := dsync.NewSemaphore(b.Client, "other", 3, quiet)
		if err != nil {
			t.Fatal(err)
		}
		check("Semaphore.Acquire", sem.Acquire(ctx, 1))
		once, err := dsync.NewOnce(b.Client, "other", quiet)
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		check("Once.Do", once.Do(ctx, func(context.Context) error { ran = true; return nil }))
		if ran {
			t.Error("Once.Do ran its function with the store's span not its own")
		}
		panics := func(what string, f func()) {
			t.Helper()
			defer func() {
				err, _ := recover().(error)
				check(what, err)
			}()
			f()
		}
		panics("Lock", m.Lock)
		panics("RWMutex.RLock", rw.RLock)
		panics("RWMutex.Lock", rw.Lock)
	})
}

// TestSweepOfAnotherSpanDeletesNothing: after an emptying that let a
// process of the default span record its own, a process still running
// buckets of a minute compacts nothing: gates are judged by their
// buckets' numbers, which mean other times under another span, so its
// sweep would take the holder's gates for old ones.
func TestSweepOfAnotherSpanDeletesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(10*time.Second))
		defer a.Close()
		ma := newMutex(t, a.Client, "job")
		ma.Lock()
		//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
		ma.Unlock()

		store.Reset() // nothing held
		c := dsync.NewMemClientOn(store, dsync.ClientWithTTL(10*time.Second))
		defer c.Close()
		mc := newMutex(t, c.Client, "job")
		mc.Lock() // records five minutes, and holds
		defer mc.Unlock()
		before := docsOf(store, "job")

		_, err := statuspage.Compact(context.Background(), a.Client, 4*time.Minute)
		if !errors.Is(err, dsync.ErrSpan) {
			t.Errorf("Compact by the process of a minute: %v, want dsync.ErrSpan", err)
		}
		if after := docsOf(store, "job"); after != before {
			t.Errorf("the held key's documents went from %d to %d in a sweep by a process of another span", before, after)
		}
	})
}
