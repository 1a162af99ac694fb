package leader_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
)

// memberReads counts the member reads (Members) per election.
type memberReads struct {
	leader.MemberStore
	mu    sync.Mutex
	reads int
}

func (c *memberReads) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.MemberStore.Members(ctx, election, maxAge)
}

func (c *memberReads) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }

// steadyCost runs a leader and a waiting candidate with opts for ten
// heartbeats once both have settled, and returns the store calls and the
// member reads of the leader's process, then of the waiting one's.
func steadyCost(t *testing.T, opts ...leader.Option) (calls, reads [2]int) {
	var mu sync.Mutex
	var n [2]int
	w := newWorld()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var cms [2]*memberReads
	for i := range 2 {
		view := w.store.Intercept(func(context.Context, memory.Call, func() error) error {
			mu.Lock()
			n[i]++
			mu.Unlock()
			return nil
		})
		cms[i] = &memberReads{MemberStore: w.members}
		p := &proc{c: newClient(t, view.Process()), members: cms[i]}
		e := newElection(t, p, opts...)
		defer e.Close()
		wg.Go(func() { _ = e.Run(ctx, func(lctx context.Context) error { <-lctx.Done(); return nil }) })
		synctest.Wait()
	}
	time.Sleep(5 * time.Second)
	mu.Lock()
	before := n
	mu.Unlock()
	r0, r1 := cms[0].count(), cms[1].count()
	time.Sleep(10 * ttl / 3) // ten heartbeats
	mu.Lock()
	defer mu.Unlock()
	return [2]int{n[0] - before[0], n[1] - before[1]}, [2]int{cms[0].count() - r0, cms[1].count() - r1}
}

// TestUnsteeredReadsNoMore: an election without steering options reads
// no members while it leads, and at most one member list per heartbeat
// while it waits (Transfer's read); with one, the leader reads the
// members at each heartbeat (and the queue only when a member ranks
// above it).
func TestUnsteeredReadsNoMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls, reads := steadyCost(t)
		t.Logf("without steering, over ten heartbeats: store calls %v, member reads %v (leader, waiting)", calls, reads)
		if reads[0] != 0 || reads[1] > 11 {
			t.Errorf("member reads %v over ten heartbeats, want 0 by the leader and at most 11 by the waiting candidate", reads)
		}
		scalls, sreads := steadyCost(t, leader.WithPriority(0))
		t.Logf("with WithPriority(0): store calls %v, member reads %v", scalls, sreads)
		if sreads[0] == 0 {
			t.Errorf("a steered leader read no members (member reads %v), so the unsteered count proves nothing", sreads)
		}
	})
}
