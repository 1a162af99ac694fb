package dsync

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestSemaphoreWaiterAcquiresAfterPassedUnitPruned: a full Semaphore's
// waiter whose walk stopped at its own release counts the units that
// release's hold left live below it; one of them (Q's) may end, and be
// pruned with its marker once a later unit (R's) held with every lower
// claim ended and released, while Q lives on (it holds another key). The
// waiter must then acquire: before, it found no marker of Q's unit on
// each poll, found Q's session alive, and counted the unit live for good
// (dsync/internal/queue: TestOwnStopPassedClaimPrunedWaiterHolds).
func TestSemaphoreWaiterAcquiresAfterPassedUnitPruned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memory.New()
		net := &hintNet{}
		slow := &slowWalkStore{key: "dsync:sem/s", goOn: make(chan struct{})}
		poll := ClientWithPollInterval(2 * time.Second)
		q := NewMemClientOn(store, net.member(), poll)
		r := NewMemClientOn(store, net.member(), poll, func(c *clientConfig) error {
			c.test.wrapStore = func(s driver.Store) driver.Store { slow.Store = s; return slow }
			return nil
		})
		p := NewMemClientOn(store, net.member(), poll)
		defer func() { _ = p.Close(); _ = r.Close(); _ = q.Close() }()
		sem := func(c *MemClient) *Semaphore {
			s, err := NewSemaphore(c.Client, "s", 3)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		qs, rs, ps1, ps2 := sem(q), sem(r), sem(p), sem(p)
		if err := qs.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		qs.Release(1)
		if err := qs.Acquire(ctx, 1); err != nil { // Q's unit
			t.Fatal(err)
		}
		var qUnit driver.Doc // the only claim of the key not ended
		store.Unended(func(d driver.Doc) bool {
			if d.Key == slow.key {
				qUnit = d
			}
			return true
		})
		if qUnit.Nonce == "" {
			t.Fatal("Q's unit is not stored")
		}
		qm, err := NewMutex(q.Client, "other") // Q lives on (its session renewed)
		if err != nil {
			t.Fatal(err)
		}
		qm.Lock()
		defer qm.Unlock()
		rHeld := make(chan error, 1)
		go func() { rHeld <- rs.Acquire(ctx, 1) }() // R's unit: inserted, its walk stalls
		synctest.Wait()
		if err := ps1.Acquire(ctx, 1); err != nil { // 1+1+1 fit 3
			t.Fatal(err)
		}
		ps1.Release(1)
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pHeld := make(chan error, 1)
		go func() { pHeld <- ps2.Acquire(pctx, 3) }() // stops at P's release: waits for R's and Q's units
		synctest.Wait()
		qs.Release(1) // 1 of the 2 units P lacks
		synctest.Wait()
		close(slow.goOn)
		if err := <-rHeld; err != nil {
			t.Fatal(err)
		}
		// R holds for a while: it refreshes its gates, which record a
		// floor at its unit, above Q's.
		time.Sleep(16 * time.Minute)
		select {
		case err := <-pHeld:
			t.Fatalf("P acquired 3 units beside R's (%v)", err)
		default:
		}
		net.mu.Lock()
		net.drop = func(e driver.Event) bool { return e.Kind == driver.Ended } // a lost hint
		net.mu.Unlock()
		rs.Release(1) // prunes below R's floor: Q's unit and its marker
		synctest.Wait()
		if _, found, err := store.Get(ctx, driver.EndID(slow.key, qUnit.Epoch, qUnit.Nonce)); err != nil || found {
			t.Fatalf("Q's marker is still stored (found %v, %v): the scenario needs it pruned", found, err)
		}
		// A bound in the bubble's time, many polls long.
		select {
		case err := <-pHeld:
			if err != nil {
				t.Fatal(err)
			}
			ps2.Release(3)
		case <-time.After(5 * time.Minute):
			cancel()
			<-pHeld
			t.Fatal("P never acquires the semaphore, though no other unit is held")
		}
	})
}

// slowWalkStore stands for a process slow to walk its claim: once a
// claim of key was inserted, its reads of end markers (by ID: it reads no
// runs) block until goOn is closed.
type slowWalkStore struct {
	driver.Store
	key     string
	mu      sync.Mutex
	stalled bool
	goOn    chan struct{}
}

func (s *slowWalkStore) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Runs = nil
	return r
}

func (s *slowWalkStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	n, err := s.Store.InsertOrdered(ctx, docs)
	if len(docs) > 0 && docs[0].Kind == driver.KindClaim && docs[0].Key == s.key {
		s.mu.Lock()
		s.stalled = true
		s.mu.Unlock()
	}
	return n, err
}

func (s *slowWalkStore) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	if strings.Contains(id, "~") {
		s.mu.Lock()
		stalled := s.stalled
		s.mu.Unlock()
		if stalled {
			<-s.goOn
		}
	}
	return s.Store.Get(ctx, id)
}
