package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// cutKey marks the contexts whose store calls a cutStore may hold.
type cutKey struct{}

// cutStore holds the nth call made under a context marked with cutKey
// until that context ends, and then fails it as a driver whose call was
// cut short does: with the context's own cause (a driver with nothing to
// add), or with a message of its own wrapping the context's error (as
// MongoDB's "connection(...) incomplete read of message header: context
// canceled"). inFlight is closed once the call is held.
type cutStore struct {
	*memory.Store
	n        int32
	says     bool
	calls    atomic.Int32
	inFlight chan struct{}
}

func (s *cutStore) cut(ctx context.Context, c memory.Call, _ func() error) error {
	switch c.Op {
	case "Prepare", "Insert", "InsertOrdered", "InsertEach", "Get", "GetRun", "Delete", "InsertSession", "GetSession", "Publish":
	default:
		return nil // made with contexts of the Client's own
	}
	if ctx.Value(cutKey{}) == nil || s.calls.Add(1) != s.n {
		return nil
	}
	close(s.inFlight)
	<-ctx.Done()
	if s.says {
		return fmt.Errorf("connection(127.0.0.1:27017[-7]) incomplete read of message header: %w", ctx.Err())
	}
	return context.Cause(ctx)
}

// A wait whose context ends while one of its store calls is in flight
// returns the context's cause itself (==), as x/sync's
// TestWeightedAcquireCanceled expects, whichever call it is (preparing
// the store, opening the session, inserting the claim, each read of the
// wait): the call failed because the context ended, and no call failed
// before. Each try cuts the nth call of a Mutex's LockContext or a
// Semaphore's Acquire, in a process that has claimed nothing yet (cold)
// or has (warm), and ends the context by a plain cancel or with a cause
// of the caller's, whatever the driver says of the call it cut short;
// or by its deadline, with a driver that says nothing more (one that
// says why it had no answer is heard then: TestLockContextSaysWhyTheBackendFailed).
func TestCancelledWaitReturnsTheCauseItself(t *testing.T) {
	acquirers := map[string]func(t *testing.T, c *dsync.Client) func(context.Context) error{
		"Mutex.LockContext": func(t *testing.T, c *dsync.Client) func(context.Context) error {
			return newMutex(t, c, "k").LockContext
		},
		"Semaphore.Acquire": func(t *testing.T, c *dsync.Client) func(context.Context) error {
			s := newSemaphore(t, c, "k", 1)
			return func(ctx context.Context) error { return s.Acquire(ctx, 1) }
		},
	}
	tries, wrong := 0, 0
	for name, acq := range acquirers {
		for _, warm := range []bool{false, true} {
			for _, end := range []string{"cancel", "cause", "deadline"} {
				for _, says := range []bool{false, true} {
					if end == "deadline" && says {
						continue
					}
					for n := int32(1); n <= 16; n++ {
						tries++
						t.Run(fmt.Sprintf("%s/warm=%v/%s/says=%v/call%d", name, warm, end, says, n), func(t *testing.T) {
							synctest.Test(t, func(t *testing.T) {
								if err, want := endInCall(t, name, acq, warm, says, end, n); err != want {
									wrong++
									t.Errorf("%s (warm %v, driver says more %v), its context ended (%s) in its store call %d: %v, want %v itself",
										name, warm, says, end, n, err, want)
								}
							})
						})
					}
				}
			}
		}
	}
	t.Logf("%d of %d tries returned something other than the cause itself", wrong, tries)
}

// endInCall runs acquire on a process of a store whose key another
// process holds, ends its context (end: "cancel", "cause" or "deadline")
// while its nth store call is in flight, and returns what it returned
// and the context's cause.
func endInCall(t *testing.T, name string, acquire func(*testing.T, *dsync.Client) func(context.Context) error, warm, says bool, end string, n int32) (err, cause error) {
	store := memory.New()
	holder := newClient(t, store)
	if name == "Mutex.LockContext" {
		newMutex(t, holder, "k").Lock()
	} else if err := newSemaphore(t, holder, "k", 1).Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cs := &cutStore{n: n, says: says, inFlight: make(chan struct{})}
	cs.Store = store.Intercept(cs.cut)
	c := newClient(t, cs)
	if warm {
		newMutex(t, c, "warm").Lock()
	}
	lock := acquire(t, c)
	marked := context.WithValue(context.Background(), cutKey{}, true)
	ctx, cancel := context.WithCancelCause(marked)
	if end == "deadline" {
		ctx, cancel = withDeadline(marked, 10*time.Second) // within each call's own bound (TTL − margin)
	}
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- lock(ctx) }()
	select {
	case <-cs.inFlight:
	case err := <-done:
		t.Fatalf("%s returned %v before its call %d", name, err, n)
	}
	switch end {
	case "cancel":
		cancel(nil)
	case "cause":
		cancel(errors.New("the caller's own cause"))
	}
	err = <-done
	return err, context.Cause(ctx)
}

// withDeadline is context.WithTimeout with a CancelCauseFunc.
func withDeadline(parent context.Context, d time.Duration) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithTimeout(parent, d)
	return ctx, func(error) { cancel() }
}
