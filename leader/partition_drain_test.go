package leader_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// counting wraps fn so that each run it begins adds one to begun.
func counting(begun *atomic.Int64, fn func(context.Context, int) error) func(context.Context, int) error {
	return func(ctx context.Context, s int) error {
		begun.Add(1)
		return fn(ctx, s)
	}
}

// joinCounting is join, with the runs member name begins counted.
func joinCounting(t *testing.T, pr *proc, l *ledger, name string, n int, begun *atomic.Int64) *member {
	p, err := leader.NewPartition(pr.c, "jobs", n, leader.WithMembers(pr.members))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{p: p, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(m.done); _ = p.Run(ctx, counting(begun, l.fn(name))) }()
	t.Cleanup(func() { cancel(); <-m.done; _ = p.Close() })
	return m
}

// waitFor polls cond, in the bubble's time, until it holds or limit
// passes; it reports whether it held.
func waitFor(limit time.Duration, cond func() bool) bool {
	for start := time.Now(); time.Since(start) <= limit; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// drainScenario balances 12 shards over members a, b and c, drains a,
// and returns what went wrong: a still owning shards after the drain had
// time to move them, or beginning any run in the 30 heartbeats after
// that. The drain is written through operator.Drain on the member store.
func drainScenario(t *testing.T) []string {
	w := newWorld()
	l := newLedger(t)
	const n = 12
	var aBegun, ignored atomic.Int64
	a := joinCounting(t, w.process(t), l, "a", n, &aBegun)
	joinCounting(t, w.process(t), l, "b", n, &ignored)
	joinCounting(t, w.process(t), l, "c", n, &ignored)
	l.waitBalanced(t, n, map[string]int{"a": 4, "b": 4, "c": 4}, 3*ttl)
	if _, err := operator.Drain(context.Background(), w.members, "jobs", a.p.ID(), true, "test", ""); err != nil {
		t.Fatal(err)
	}
	var v []string
	settled := waitFor(4*ttl, func() bool {
		c, total := l.counts()
		return c["a"] == 0 && total == n
	})
	if !settled {
		c, total := l.counts()
		v = append(v, fmt.Sprintf("drained a still runs shards: %v (%d of %d run)", c, total, n))
	}
	before := aBegun.Load()
	heartbeats := 30 * ttl / 3 // the default heartbeat is the renew interval, TTL/3
	for start := time.Now(); time.Since(start) < heartbeats; time.Sleep(100 * time.Millisecond) {
		if c, _ := l.counts(); c["a"] > 0 {
			v = append(v, fmt.Sprintf("drained a runs %d shards again", c["a"]))
			break
		}
	}
	if got := aBegun.Load() - before; got > 0 {
		v = append(v, fmt.Sprintf("drained a began %d runs", got))
	}
	return v
}

func TestPartitionDrainMovesShardsForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if v := drainScenario(t); len(v) > 0 {
			t.Fatal(v)
		}
	})
}

func TestPartitionUndrainAndLateDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 6
		var ignored atomic.Int64
		a := joinCounting(t, w.process(t), l, "a", n, &ignored)
		joinCounting(t, w.process(t), l, "b", n, &ignored)
		l.waitBalanced(t, n, map[string]int{"a": 3, "b": 3}, 3*ttl)
		ctx := context.Background()
		drain, err := operator.Drain(ctx, w.members, "jobs", a.p.ID(), true, "test", "")
		if err != nil {
			t.Fatal(err)
		}
		l.waitBalanced(t, n, map[string]int{"a": 0, "b": 6}, 4*ttl)
		view, err := a.p.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range view.Members {
			if m.Draining != (m.ID == a.p.ID()) {
				t.Errorf("view: member %s Draining %v", m.ID, m.Draining)
			}
		}
		undrain, err := operator.Drain(ctx, w.members, "jobs", a.p.ID(), false, "test", "")
		if err != nil {
			t.Fatal(err)
		}
		if undrain.Gen <= drain.Gen {
			t.Fatalf("undrain Gen %d, drain's %d", undrain.Gen, drain.Gen)
		}
		l.waitBalanced(t, n, map[string]int{"a": 3, "b": 3}, 4*ttl)

		// A drain sent before the undrain lands after it: a drain of a
		// lower Gen than the undrain's changes nothing. Sent again, the
		// same drain is refused.
		late := operator.Directive{Kind: operator.DirectiveDrain, Member: a.p.ID(), Gen: drain.Gen, Drain: true}
		if err := w.members.PutDirective(ctx, "jobs", late); !errors.Is(err, operator.ErrDirectiveExists) {
			t.Fatalf("drain sent twice: %v, want ErrDirectiveExists", err)
		}
		other := operator.Directive{Kind: operator.DirectiveDrain, Member: "b-never-joined", Gen: 2, Drain: false}
		if err := w.members.PutDirective(ctx, "jobs", other); err != nil {
			t.Fatal(err)
		}
		lateOther := operator.Directive{Kind: operator.DirectiveDrain, Member: "b-never-joined", Gen: 1, Drain: true}
		if err := w.members.PutDirective(ctx, "jobs", lateOther); err != nil {
			t.Fatal(err)
		}
		ds, err := w.members.Directives(ctx, "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if d := operator.Drained(ds); len(d) != 0 {
			t.Fatalf("drained after undrains and late drains: %v", d)
		}
		terms := l.terms
		time.Sleep(10 * ttl)
		if c, total := l.counts(); c["a"] != 3 || total != n || l.terms != terms {
			t.Fatalf("after the late drain: %v, %d terms begun", c, l.terms-terms)
		}
	})
}

// When every live member is drained, the shards stay where they run: no
// member is assigned any, none queues, and no owner hands one over.
func TestPartitionAllDrainedKeepOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 6
		var ignored atomic.Int64
		a := joinCounting(t, w.process(t), l, "a", n, &ignored)
		b := joinCounting(t, w.process(t), l, "b", n, &ignored)
		l.waitBalanced(t, n, map[string]int{"a": 3, "b": 3}, 3*ttl)
		terms := l.terms
		ctx := context.Background()
		for _, m := range []*member{a, b} {
			if _, err := operator.Drain(ctx, w.members, "jobs", m.p.ID(), true, "test", ""); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * ttl)
		if c, total := l.counts(); c["a"] != 3 || c["b"] != 3 || total != n || l.terms != terms {
			t.Fatalf("all drained: %v run, %d terms begun", c, l.terms-terms)
		}
		view, err := a.p.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for s, o := range view.Shards {
			if o.Member == "" || o.Assigned != "" {
				t.Errorf("shard %d: %+v, want its owner and no assignment", s, o)
			}
		}
	})
}
