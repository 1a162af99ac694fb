package leader_test

import (
	"context"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// Observe, from a process that does not run the partition, reports the
// members with their weights and, once balanced, every shard's owner
// with the token its fn was given; each view differs from the one before,
// and the channel closes when the context ends.
func TestPartitionObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 6
		watcher, err := leader.NewPartition(w.process(t).c, "jobs", n, leader.WithMembers(w.members))
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Close()
		ctx, cancel := context.WithCancel(context.Background())
		views := watcher.Observe(ctx)

		a := join(t, w.process(t), l, "a", n)
		b := join(t, w.process(t), l, "b", n, leader.WithWeight(2))
		name := map[string]string{a.p.ID(): "a", b.p.ID(): "b"}
		l.waitBalanced(t, n, map[string]int{"a": 2, "b": 4}, 3*ttl)

		var last *leader.PartitionView
		deadline := time.After(3 * ttl)
		for settled := false; !settled; {
			select {
			case v := <-views:
				if last != nil && equalViews(*last, v) {
					t.Errorf("the same view sent twice: %+v", v)
				}
				last = &v
				settled = matches(l, name, v)
			case <-deadline:
				t.Fatalf("no view matches the ledger within %v; last %+v", 3*ttl, last)
			}
		}
		want := []leader.PartitionMember{{ID: a.p.ID(), Weight: 1}, {ID: b.p.ID(), Weight: 2}}
		if b.p.ID() < a.p.ID() {
			want[0], want[1] = want[1], want[0]
		}
		for i := range want {
			want[i].Host, _ = os.Hostname()
			want[i].PID = os.Getpid()
		}
		if len(last.Members) != 2 || last.Members[0] != want[0] || last.Members[1] != want[1] {
			t.Errorf("members %+v, want %+v", last.Members, want)
		}

		cancel()
		for range views { // drains, then ends when the channel closes
		}
	})
}

// matches reports whether view v shows every shard owned as the ledger
// has it (owner and token), and assigned to its owner.
func matches(l *ledger, name map[string]string, v leader.PartitionView) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for s, o := range v.Shards {
		if o.Member == "" || name[o.Member] != l.owner[s] || o.Token != l.lastToken[s] || o.Assigned != o.Member {
			return false
		}
	}
	return true
}

func equalViews(a, b leader.PartitionView) bool {
	if len(a.Shards) != len(b.Shards) || len(a.Members) != len(b.Members) {
		return false
	}
	for i := range a.Shards {
		if a.Shards[i] != b.Shards[i] {
			return false
		}
	}
	for i := range a.Members {
		if a.Members[i] != b.Members[i] {
			return false
		}
	}
	return true
}
