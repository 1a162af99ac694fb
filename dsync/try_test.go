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
)

// tryer is one Try method of a primitive, in its Context form, with what
// undoes a success.
type tryer struct {
	name string
	try  func(context.Context) error
	undo func()
}

// tryers returns the Try methods of a Mutex, an RWMutex (write and read)
// and a Semaphore on b, each on a key of its own.
func tryers(t *testing.T, b *dsync.Client, opts ...dsync.Option) []tryer {
	t.Helper()
	m, err := dsync.NewMutex(b, "mutex", opts...)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := dsync.NewRWMutex(b, "rw", opts...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := dsync.NewRWMutex(b, "rw-read", opts...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dsync.NewSemaphore(b, "sem", 2, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return []tryer{
		{"Mutex.TryLockContext", m.TryLockContext, m.Unlock},
		{"RWMutex.TryLockContext", rw.TryLockContext, rw.Unlock},
		{"RWMutex.TryRLockContext", r.TryRLockContext, r.RUnlock},
		{"Semaphore.TryAcquireContext", func(ctx context.Context) error { return s.TryAcquireContext(ctx, 1) }, func() { s.Release(1) }},
	}
}

// A try against a store that does not answer fails when the try timeout
// passes, whatever the TTL (here the default, 15 s), with an error that
// is neither ErrHeld nor a context's; the bool forms return false within
// the same bound. The claims whose inserts were held back land when the
// store answers again, and are withdrawn: another process takes each key
// at once, long before the lease of the process that tried could expire.
func TestTryBoundedWhenTheStoreDoesNotAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoProcesses(t)
		ctx := context.Background()
		as := tryers(t, a.Client)
		for _, tr := range as {
			// A first hold opens the process's session, so that the
			// attempts below get as far as inserting their claims.
			if err := tr.try(ctx); err != nil {
				t.Fatalf("%s: %v", tr.name, err)
			}
			tr.undo()
		}
		bs := tryers(t, b.Client)
		for i, tr := range as {
			a.SetAnswering(false)
			start := time.Now()
			err := tr.try(ctx)
			took := time.Since(start)
			a.SetAnswering(true) // what the attempt sent lands now
			switch {
			case err == nil:
				t.Fatalf("%s held on a store that does not answer", tr.name)
			case took > dsync.DefaultTryTimeout:
				t.Errorf("%s returned after %v, want within the try timeout %v", tr.name, took, dsync.DefaultTryTimeout)
			case errors.Is(err, dsync.ErrHeld), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
				t.Errorf("%s: %v, want the store's error, neither ErrHeld nor a context's", tr.name, err)
			case !strings.Contains(err.Error(), "did not answer"):
				t.Errorf("%s: %v, want it to say the store did not answer", tr.name, err)
			}
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			err = waitTry(wctx, bs[i])
			cancel()
			if err != nil {
				t.Errorf("%s of another process after the store answered again: %v; the late claim was left in the queue", bs[i].name, err)
				continue
			}
			bs[i].undo()
		}
		m, err := dsync.NewMutex(a.Client, "mutex")
		if err != nil {
			t.Fatal(err)
		}
		a.SetAnswering(false)
		start := time.Now()
		if m.TryLock() {
			t.Fatal("TryLock held on a store that does not answer")
		}
		if took := time.Since(start); took > dsync.DefaultTryTimeout {
			t.Errorf("TryLock returned false after %v, want within %v", took, dsync.DefaultTryTimeout)
		}
		a.SetAnswering(true)
	})
}

// waitTry tries until the try holds or ctx ends.
func waitTry(ctx context.Context, tr tryer) error {
	for {
		err := tr.try(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// TryLockContext and its kin say why they failed: ErrHeld (a *HeldError
// naming the holder) when another process holds the key; the context's
// cause, unchanged, when it ended first; the store's error when it could
// not be reached.
func TestTryContextSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoProcesses(t)
		ctx := context.Background()
		bs := tryers(t, b.Client)
		// Process a holds every key: the Mutex, both RWMutexes for
		// writing (readers wait for writers), both units of the
		// Semaphore.
		m, err := dsync.NewMutex(a.Client, "mutex")
		if err != nil {
			t.Fatal(err)
		}
		m.Lock()
		defer m.Unlock()
		for _, key := range []string{"rw", "rw-read"} {
			w, err := dsync.NewRWMutex(a.Client, key)
			if err != nil {
				t.Fatal(err)
			}
			w.Lock()
			defer w.Unlock()
		}
		s, err := dsync.NewSemaphore(a.Client, "sem", 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		defer s.Release(2)
		for _, tr := range bs {
			err := tr.try(ctx)
			var held *dsync.HeldError
			if !errors.Is(err, dsync.ErrHeld) || !errors.As(err, &held) || held.Owner == "" {
				t.Errorf("%s while another process holds: %v, want a *HeldError naming the holder", tr.name, err)
			}
		}
		cause := errors.New("the caller gave up")
		cctx, cancel := context.WithCancelCause(ctx)
		cancel(cause)
		for _, tr := range bs {
			if err := tr.try(cctx); err != cause {
				t.Errorf("%s with an ended context: %v, want its cause unchanged", tr.name, err)
			}
		}
		b.SetAnswering(false)
		for _, tr := range bs {
			cctx, cancel := context.WithCancelCause(ctx)
			time.AfterFunc(100*time.Millisecond, func() { cancel(cause) })
			if err := tr.try(cctx); err != cause {
				t.Errorf("%s with a context that ends during the attempt: %v, want its cause unchanged", tr.name, err)
			}
			cancel(nil)
		}
		b.SetAnswering(true)
		b.SetReachable(false)
		for _, tr := range bs {
			if err := tr.try(ctx); !errors.Is(err, memory.ErrUnreachable) || errors.Is(err, dsync.ErrHeld) {
				t.Errorf("%s on an unreachable store: %v, want the store's error", tr.name, err)
			}
		}
		b.SetReachable(true)
	})
}

// A Mutex that another goroutine of this process holds fails a try with
// ErrHeld, at once.
func TestTryLockContextHeldHere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := dsync.NewMemClient()
		defer b.Close()
		m, err := dsync.NewMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		m.Lock()
		defer m.Unlock()
		err = m.TryLockContext(context.Background())
		var held *dsync.HeldError
		if !errors.As(err, &held) || held.Owner != dsync.Owner(m) || held.Token != m.Token() {
			t.Errorf("TryLockContext while held here: %v, want a *HeldError naming this Mutex", err)
		}
	})
}

// A try is bounded even when it is a process's first call beside another
// that waits for the store without a bound (a Lock, whose first call
// settles the Client's settings with the store): it does not queue
// behind that call.
func TestTryBoundedBesideAFirstCallThatWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := dsync.NewMemClient(dsync.ClientWithTTL(10 * time.Second))
		defer b.Close()
		b.SetAnswering(false)
		waiter, err := dsync.NewMutex(b.Client, "a") // a session of its own
		if err != nil {
			t.Fatal(err)
		}
		lctx, cancel := context.WithCancel(context.Background())
		locked := make(chan error, 1)
		go func() { locked <- waiter.LockContext(lctx) }()
		synctest.Wait() // the Lock waits for the store
		m, err := dsync.NewMutex(b.Client, "b")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = m.TryLockContext(context.Background())
		took := time.Since(start)
		if err == nil || errors.Is(err, dsync.ErrHeld) {
			t.Errorf("TryLockContext on a store that does not answer: %v, want the store's error", err)
		}
		if took > dsync.DefaultTryTimeout {
			t.Errorf("TryLockContext returned after %v, want within the try timeout %v", took, dsync.DefaultTryTimeout)
		}
		cancel()
		<-locked
		b.SetAnswering(true)
	})
}
