package leader_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// Members whose heartbeat intervals differ (Clients of different TTLs,
// or WithPartitionHeartbeat) judge each other live alike: a member with
// a short interval does not take one with a long interval, which writes
// its unchanged status every other one of its intervals, for dead
// between its writes, and nothing moves in a settled partition.
func TestPartitionMembersOfDifferentHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 4
		fast := join(t, w.process(t), l, "fast", n, leader.WithHeartbeatInterval(200*time.Millisecond))
		slow := join(t, w.process(t), l, "slow", n, leader.WithHeartbeatInterval(500*time.Millisecond))
		l.waitBalanced(t, n, map[string]int{"fast": 2, "slow": 2}, 2*ttl)
		time.Sleep(2 * time.Second) // every status read with both intervals known
		l.mu.Lock()
		terms := l.terms
		l.mu.Unlock()
		for range 100 {
			v, err := fast.p.View(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(v.Members, func(m leader.PartitionMember) bool { return m.ID == slow.p.ID() }) {
				t.Fatalf("at %v the member of the short heartbeat took the other for gone: view %+v", time.Now().Format("15:04:05.000"), v.Members)
			}
			time.Sleep(50 * time.Millisecond)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.terms != terms {
			t.Errorf("%d terms began in a settled partition", l.terms-terms)
		}
	})
}
