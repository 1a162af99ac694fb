package dsync_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// distant returns a view of shared reached over a round trip of rtt:
// every read and write of claims and markers waits it out before it is
// applied.
func distant(shared *memory.Store, rtt time.Duration) *memory.Store {
	return shared.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		switch c.Op {
		case "Get", "GetRun", "Insert", "InsertOrdered":
			time.Sleep(rtt)
		}
		return nil
	})
}

// Processes that each try a key in a loop, holding it briefly at every
// success, contend, and a try that meets a holder fails with ErrHeld:
// never with the try timeout's error, though every request is answered.
// A try whose insert chained on its own release lost to another
// process's turn reads on and inserts again once; chasing each of a
// rival's turns (each won by an insert chained on the rival's own
// release, one round trip against the chaser's several) would go on
// until the try timeout cut it short.
func TestTryHerdFailsWithErrHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memory.New()
		const procs, rtt = 3, 20 * time.Millisecond
		var (
			mu         sync.Mutex
			held, busy int
			other      []error
			longest    time.Duration
			wg         sync.WaitGroup
			end        = time.Now().Add(20 * time.Second)
			ctx        = context.Background()
		)
		for range procs {
			c := newClient(t, distant(shared, rtt))
			m := newMutex(t, c, "herd")
			wg.Go(func() {
				for time.Now().Before(end) {
					start := time.Now()
					err := m.TryLockContext(ctx)
					took := time.Since(start)
					mu.Lock()
					longest = max(longest, took)
					switch {
					case err == nil:
						held++
					case errors.Is(err, dsync.ErrHeld):
						busy++
					default:
						other = append(other, err)
					}
					mu.Unlock()
					if err == nil {
						time.Sleep(time.Millisecond)
						m.Unlock()
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d processes, round trip %v: %d held, %d ErrHeld, %d other; longest try %v", procs, rtt, held, busy, len(other), longest)
		for i, err := range other {
			if i == 3 {
				break
			}
			t.Errorf("a try failed with %v, not ErrHeld", err)
		}
		if len(other) > 0 {
			t.Errorf("%d tries failed otherwise than with ErrHeld", len(other))
		}
		if held == 0 || busy == 0 {
			t.Errorf("%d held, %d ErrHeld: want both", held, busy)
		}
	})
}

// Readers that try a key at once all hold: a race lost to another
// reader's claim is lost to a claim that holds beside the try, and the
// try inserts again above it however often that happens.
func TestTryRLockHerdAllHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := memory.New()
		const readers = 12
		var wg sync.WaitGroup
		errs := make([]error, readers)
		rws := make([]*dsync.RWMutex, readers)
		for i := range readers {
			c := newClient(t, distant(shared, 5*time.Millisecond))
			rw, err := dsync.NewRWMutex(c, "catalog", quiet)
			if err != nil {
				t.Fatal(err)
			}
			rws[i] = rw
		}
		for i, rw := range rws {
			wg.Go(func() { errs[i] = rw.TryRLockContext(context.Background()) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("reader %d of %d trying at once: %v", i, readers, err)
				continue
			}
			rws[i].RUnlock()
		}
	})
}
