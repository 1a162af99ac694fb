package dsync_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestCloseIsBoundedWhenTheStoreIsGone: Close of a Client whose store
// answers nothing returns within DefaultReleaseTimeout, although it has a
// hold and a waiting claim to end, a key to record in the directory and
// an end of unknown outcome being sent again; and holds already lost (their
// lease ran out) cost it no request at all, nor a wait for the key being
// recorded.
func TestCloseIsBoundedWhenTheStoreIsGone(t *testing.T) {
	t.Run("live claims", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := newGoneStore()
			other := newClient(t, store, dsync.ClientWithTTL(time.Minute))
			c, err := dsync.NewClient(store, dsync.ClientWithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			blocker := newMutex(t, other, "w")
			blocker.Lock()
			held := newMutex(t, c, "k")
			held.Lock()
			released := newMutex(t, c, "r")
			released.Lock()
			waiting := newMutex(t, c, "w")
			waited := make(chan error, 1)
			go func() { waited <- waiting.LockContext(context.Background()) }()
			synctest.Wait()
			// The directory's put of a key claimed next hangs; so does
			// everything once the store is gone.
			store.hang("PutKeys")
			recorded := newMutex(t, c, "d")
			recorded.Lock()
			synctest.Wait()
			store.goAway()
			// An Unlock whose end is not answered: its end is sent again
			// in the background.
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := released.UnlockContext(uctx); err == nil {
				t.Fatal("Unlock succeeded on a store that answers nothing")
			}
			time.Sleep(time.Second) // the end is being sent again

			start := time.Now()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			t.Logf("Close took %v (fake time) with the store gone", took)
			if took > dsync.DefaultReleaseTimeout {
				t.Errorf("Close took %v with the store gone, want at most %v (DefaultReleaseTimeout)", took, dsync.DefaultReleaseTimeout)
			}
			if err := <-waited; !errors.Is(err, dsync.ErrClosed) {
				t.Errorf("a Lock waiting on the closed Client returned %v, want ErrClosed", err)
			}
			store.comeBack()
			blocker.Unlock()
		})
	})
	t.Run("holds already lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := newGoneStore()
			// Without an outage grace the lease retires the session at
			// its deadline. With one it is suspended, and Close marks its
			// claims dead, within the release timeout (the case above).
			c, err := dsync.NewClient(store, dsync.ClientWithTTL(2*time.Second), dsync.ClientWithOutageGrace(0))
			if err != nil {
				t.Fatal(err)
			}
			// The directory's put of the key hangs: it is in flight at Close.
			store.hang("PutKeys")
			m := newMutex(t, c, "k")
			m.Lock()
			synctest.Wait()
			store.goAway()
			<-m.Lost()
			synctest.Wait()

			sent := store.requests.Load()
			start := time.Now()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if n := store.requests.Load() - sent; n != 0 {
				t.Errorf("Close sent %d requests for a hold already lost, want none: its lease ended it", n)
			}
			if took := time.Since(start); took > 0 {
				t.Errorf("Close took %v for a hold already lost, with the store gone; want no wait", took)
			}
		})
	})
	t.Run("holds lost a moment before Close, the sweeper's too", func(t *testing.T) {
		// Close called the moment Lost closes, while the goroutine that
		// judged the session over has not yet told anyone (it is stopped
		// there): the holds are lost all the same, the sweeper's lock
		// among them, and cost Close no request. (Before the Client
		// learned of a loss as Lost closed, Close sent each an end.)
		synctest.Test(t, func(t *testing.T) {
			store := newGoneStore()
			c, err := dsync.NewClient(store, dsync.ClientWithTTL(2*time.Second),
				dsync.ClientWithBucketSpan(4*time.Second), dsync.ClientWithIdleAge(16*time.Second),
				dsync.ClientWithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			// The sweeper compacts under its lock: its compaction hangs,
			// so it holds the lock from its first sweep (within 1.5
			// spans) until Close.
			store.hang("Compact")
			m := newMutex(t, c, "k")
			judged, resume := stopWhenJudged(m)
			m.Lock()
			time.Sleep(7 * time.Second)
			synctest.Wait()
			if n := store.requests.Load(); n != 1 {
				t.Fatalf("%d requests hung before the store went away, want 1: the sweeper's compaction, under its lock", n)
			}
			store.goAway()
			<-judged
			// The renewal under way gives up (its session's context is
			// cancelled) before Close: its requests are not Close's. The
			// judging goroutine stays stopped.
			synctest.Wait()
			select {
			case <-m.Lost():
			default:
				t.Fatal("Lost still open once the session was judged over")
			}

			sent := store.requests.Load()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if n := store.requests.Load() - sent; n != 0 {
				t.Errorf("Close sent %d requests for holds lost before it (the sweeper's and k's), want none: their lease ended them", n)
			}
			resume()
		})
	})
}

// goneStore is a memory.Store that can stop answering, as a database that
// went away does for a MongoDB driver: a request (of every role too)
// waits until its context ends (the driver finds no server to send it
// to), then fails. Prepare, which sends nothing once done, is the
// memory.Store's.
type goneStore struct {
	*memory.Store
	mu       sync.Mutex
	all      bool            // every request hangs
	hung     map[string]bool // the requests that hang, by method
	requests atomic.Int64    // requests made while hanging
}

func newGoneStore() *goneStore {
	s := &goneStore{hung: map[string]bool{}}
	s.Store = memory.New().Intercept(s.wait)
	return s
}

func (s *goneStore) hang(method string) { s.mu.Lock(); s.hung[method] = true; s.mu.Unlock() }
func (s *goneStore) goAway()            { s.mu.Lock(); s.all = true; s.mu.Unlock() }
func (s *goneStore) comeBack()          { s.mu.Lock(); s.all = false; clear(s.hung); s.mu.Unlock() }

// wait returns nil if the store answers c, or else ctx's error once ctx
// ends.
func (s *goneStore) wait(ctx context.Context, c memory.Call, _ func() error) error {
	s.mu.Lock()
	gone := c.Op != "Prepare" && (s.all || s.hung[c.Op])
	s.mu.Unlock()
	if !gone {
		return nil
	}
	s.requests.Add(1)
	<-ctx.Done()
	return errors.Join(errors.New("no server answered"), ctx.Err())
}
