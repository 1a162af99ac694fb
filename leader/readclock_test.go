package leader_test

import (
	"context"
	"errors"
	"github.com/go-dsync/dsync/dsync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
)

// aheadStore is a process on a memory store whose clock for reads
// (its driver.Roles.Reads: hello's, behind a mongos on a host whose clock
// is ahead) runs ahead of the store's, and which counts the inserts sent
// through it. So does its ServerTime until Prepare, which driver.Store
// leaves undefined until then (dsyncmongo's answered from hello).
type aheadStore struct {
	*memory.Process
	ahead    atomic.Int64 // a time.Duration
	inserts  atomic.Int64
	prepared atomic.Bool
}

func (s *aheadStore) Roles() driver.Roles {
	r := s.Process.Roles()
	r.Reads = s
	return r
}
func (s *aheadStore) PrepareRead(ctx context.Context) error { return s.Process.Prepare(ctx) }
func (s *aheadStore) Prepare(ctx context.Context) error {
	s.prepared.Store(true)
	return s.Process.Prepare(ctx)
}
func (s *aheadStore) ReadServerTime() driver.Interval {
	iv := s.Process.ServerTime()
	ahead := time.Duration(s.ahead.Load())
	return driver.Interval{Earliest: iv.Earliest.Add(ahead), Latest: iv.Latest.Add(ahead)}
}
func (s *aheadStore) ServerTime() driver.Interval {
	if s.prepared.Load() {
		return s.Process.ServerTime()
	}
	return s.ReadServerTime()
}
func (s *aheadStore) Insert(ctx context.Context, d driver.Doc) error {
	s.inserts.Add(1)
	return s.Process.Insert(ctx, d)
}

// TestLeaderReadAheadEndsNoLease: a watcher whose clock for reads runs
// twenty TTLs ahead sees the leader's lease as expired, and Leader says
// nobody leads (the lease's claim is Expired, not holding); it inserts
// nothing, and the leader goes on leading: another candidate does not
// take over. Before, reading who leads inserted the lease's dead marker
// when its session looked expired by that clock.
func TestLeaderReadAheadEndsNoLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newWorld()
		// Without an outage grace: the read judges the lease by its
		// expiry, the judgement this test is about (with one, the record
		// of up-time shows no renewal past the expiry: the lease reads
		// as held).
		a := newElection(t, w.process(t, dsync.ClientWithOutageGrace(0)))
		defer a.Close()
		lctx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}

		ahead := &aheadStore{Process: w.store.Process()}
		ahead.ahead.Store(int64(20 * ttl))
		watcher := newElection(t, &proc{c: newClient(t, ahead, dsync.ClientWithOutageGrace(0)), members: w.members})
		defer watcher.Close()
		if info, err := watcher.Leader(ctx); !errors.Is(err, leader.ErrNoLeader) {
			t.Errorf("Leader read %v ahead = %+v, %v; want %v (the lease looks expired)", 20*ttl, info, err, leader.ErrNoLeader)
		}
		if n := ahead.inserts.Load(); n != 0 {
			t.Errorf("reading who leads sent %d inserts, want none", n)
			return // the lease may have been ended: two candidates may lead
		}

		b := newElection(t, w.process(t))
		defer b.Close()
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := b.Campaign(bctx)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Errorf("another candidate's Campaign returned %v while %s leads", err, a.ID())
		default:
		}
		if lctx.Err() != nil {
			t.Errorf("the leader lost its leadership: %v", context.Cause(lctx))
		}
		reader := newElection(t, w.process(t))
		defer reader.Close()
		if info, err := reader.Leader(ctx); err != nil || info.ID != a.ID() {
			t.Errorf("Leader read on the store's clock = %+v, %v; want %s", info, err, a.ID())
		}
		// Its clock put right, the watcher sees the leader again: what
		// it judged by the clock that ran ahead was not kept (a Client
		// keeps a claim Expired once found so only by the clock of the
		// writes; kept, it said nobody led for as long as it ran).
		ahead.ahead.Store(0)
		if info, err := watcher.Leader(ctx); err != nil || info.ID != a.ID() {
			t.Errorf("Leader read once the watcher's clock is right = %+v, %v; want %s", info, err, a.ID())
		}
		cancel()
		<-done
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
