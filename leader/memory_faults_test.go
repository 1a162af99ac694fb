package leader_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// A leader whose in-memory store becomes unreachable loses its term at
// its deadline, and member status fails meanwhile; once reachable again,
// it is elected again.
func TestMemoryStoreUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		w := newWorld()
		p := w.process(t, dsync.ClientWithTTL(ttl))
		e := newElection(t, p)
		defer e.Close()
		lctx, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p.store.SetReachable(false)
		w.members.SetReachable(false)
		<-lctx.Done()
		if at := time.Since(start); at > ttl || !errors.Is(context.Cause(lctx), leader.ErrLeadershipLost) {
			t.Errorf("leadership ended %v after the store went away (TTL %v), cause %v; want ErrLeadershipLost within the TTL", at, ttl, context.Cause(lctx))
		}
		if _, err := e.Members(context.Background()); !errors.Is(err, leadertest.ErrUnreachable) {
			t.Errorf("Members while unreachable = %v, want ErrUnreachable", err)
		}
		p.store.SetReachable(true)
		w.members.SetReachable(true)
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatalf("Campaign once reachable again: %v", err)
		}
		if err := e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Two processes on one memory store, each with a Client of its own on its
// view of the store (memory.Store.Process): the leader is partitioned
// from the store, its term ends at its deadline, and the other process is
// elected after that, with a higher term.
func TestPartitionedLeaderAndATakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 2 * time.Second
		w := newWorld()
		a, b := w.process(t, dsync.ClientWithTTL(ttl)), w.process(t, dsync.ClientWithTTL(ttl))
		ea := newElection(t, a)
		defer ea.Close()
		eb := newElection(t, b)
		defer eb.Close()
		ctx := context.Background()
		actx, err := ea.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.store.SetReachable(false)
		bctx, err := eb.Campaign(ctx)
		if err != nil {
			t.Fatalf("the other process's Campaign: %v", err)
		}
		select {
		case <-actx.Done():
		default:
			t.Fatal("the other process was elected while the partitioned leader's term was live")
		}
		if !errors.Is(context.Cause(actx), leader.ErrLeadershipLost) {
			t.Errorf("the partitioned leader's term ended with %v, want ErrLeadershipLost", context.Cause(actx))
		}
		ta, _ := leader.TermOf(actx)
		tb, _ := leader.TermOf(bctx)
		if tb.Token <= ta.Token {
			t.Errorf("the new leader's term %d is not above the partitioned one's %d", tb.Token, ta.Token)
		}
		if info, err := eb.Leader(ctx); err != nil || info.ID != eb.ID() {
			t.Errorf("Leader from the other process = %+v, %v; want it", info, err)
		}
		a.store.SetReachable(true)
		if err := eb.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
