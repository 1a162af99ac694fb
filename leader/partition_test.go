package leader_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// ledger records who runs which shard, failing the test if two members run
// one shard at once or a shard's token does not increase, unless the
// member that ran it last takes its term back (the outage grace, the
// default: a lease an outage did not end keeps its token).
type ledger struct {
	t         *testing.T
	mu        sync.Mutex
	owner     map[int]string
	lastToken map[int]uint64
	lastOwner map[int]string
	terms     int
}

func newLedger(t *testing.T) *ledger {
	return &ledger{t: t, owner: map[int]string{}, lastToken: map[int]uint64{}, lastOwner: map[int]string{}}
}

// fn is the per-shard work of member id: it holds the shard until its
// context ends.
func (l *ledger) fn(id string) func(context.Context, int) error {
	return func(ctx context.Context, s int) error {
		info, ok := leader.TermOf(ctx)
		l.mu.Lock()
		if !ok {
			l.t.Errorf("shard %d: TermOf found no term", s)
		}
		if o, busy := l.owner[s]; busy {
			l.t.Errorf("shard %d run by %s while %s runs it", s, id, o)
		}
		if info.Token < l.lastToken[s] || info.Token == l.lastToken[s] && id != l.lastOwner[s] {
			l.t.Errorf("shard %d: token %d of %s after %d of %s", s, info.Token, id, l.lastToken[s], l.lastOwner[s])
		}
		l.owner[s], l.lastToken[s], l.lastOwner[s] = id, info.Token, id
		l.terms++
		l.mu.Unlock()
		<-ctx.Done()
		l.mu.Lock()
		if l.owner[s] == id {
			delete(l.owner, s)
		}
		l.mu.Unlock()
		return nil
	}
}

// counts returns how many shards each member runs, and how many run.
func (l *ledger) counts() (map[string]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := map[string]int{}
	for _, id := range l.owner {
		c[id]++
	}
	return c, len(l.owner)
}

// waitBalanced waits, in the bubble's time, until all n shards run, spread
// as want gives per member, and returns how long that took.
func (l *ledger) waitBalanced(t *testing.T, n int, want map[string]int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		c, total := l.counts()
		ok := total == n
		for id, k := range want {
			ok = ok && c[id] == k
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("not balanced after %v: %v (%d of %d run), want %v", limit, c, total, n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type member struct {
	p      *leader.Partition
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
}

func join(t *testing.T, pr *proc, l *ledger, name string, n int, opts ...leader.Option) *member {
	p, err := leader.NewPartition(pr.c, "jobs", n, append([]leader.Option{leader.WithMembers(pr.members)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{p: p, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(m.done); _ = p.Run(ctx, l.fn(name)) }()
	t.Cleanup(func() { cancel(); <-m.done; _ = p.Close() })
	return m
}

func TestPartitionBalancesJoinsAndLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 12
		a := join(t, w.process(t), l, "a", n)
		l.waitBalanced(t, n, map[string]int{"a": n}, ttl)
		join(t, w.process(t), l, "b", n)
		l.waitBalanced(t, n, map[string]int{"a": 6, "b": 6}, 2*ttl)
		join(t, w.process(t), l, "c", n)
		l.waitBalanced(t, n, map[string]int{"a": 4, "b": 4, "c": 4}, 2*ttl)
		terms := l.terms
		if moved := terms - n - 6; moved > 4 { // the third join's minimum: ceil(12/3)
			t.Errorf("third join moved %d shards, want at most 4", moved)
		}
		// a leaves gracefully: its shards go to b and c.
		a.cancel()
		<-a.done
		l.waitBalanced(t, n, map[string]int{"a": 0, "b": 6, "c": 6}, 2*ttl)
		if moved := l.terms - terms; moved != 4 {
			t.Errorf("a's leave moved %d shards, want its 4", moved)
		}
	})
}

func TestPartitionWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		join(t, w.process(t), l, "big", 9, leader.WithWeight(2))
		join(t, w.process(t), l, "small", 9)
		l.waitBalanced(t, 9, map[string]int{"big": 6, "small": 3}, 3*ttl)
	})
}

// A member cut off from the store (its renewals and heartbeats fail, as
// after a SIGKILL) loses its shards; the others own them again within two
// TTLs, never while its holds are valid (the ledger fails on overlap).
func TestPartitionReownsAfterCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 8
		dead := w.cut(t)
		join(t, dead.proc, l, "dead", n)
		join(t, w.process(t), l, "b", n)
		l.waitBalanced(t, n, map[string]int{"dead": 4, "b": 4}, 2*ttl)
		dead.renewDown.Store(true)
		dead.heartbeatDown.Store(true)
		took := l.waitBalanced(t, n, map[string]int{"dead": 0, "b": 8}, 2*ttl)
		t.Logf("re-owned %v after the crash (TTL %v)", took, ttl)
	})
}

func TestPartitionCloseHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		a := join(t, w.process(t), l, "a", 4)
		join(t, w.process(t), l, "b", 4)
		l.waitBalanced(t, 4, map[string]int{"a": 2, "b": 2}, 2*ttl)
		start := time.Now()
		a.cancel()
		<-a.done
		if err := a.p.Close(); err != nil {
			t.Fatal(err)
		}
		l.waitBalanced(t, 4, map[string]int{"a": 0, "b": 4}, 2*ttl)
		if took := time.Since(start); took >= ttl {
			t.Errorf("handover took %v, want less than a TTL (%v): the shards were released, not left to expire", took, ttl)
		}
	})
}

// countingMembers counts the member status writes of one process.
type countingMembers struct {
	leader.MemberStore
	puts atomic.Int64
}

func (c *countingMembers) PutMember(ctx context.Context, election string, m leader.Member) error {
	c.puts.Add(1)
	return c.MemberStore.PutMember(ctx, election, m)
}

// A member of a settled partition writes its unchanged status every other
// heartbeat interval, not every one (issue 45: a member's steady cost is
// its lease's renewal, its read of the members and this write), and stays
// live for the others meanwhile: nothing moves.
func TestPartitionSettledWritesEveryOtherInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 4
		pa, pb := w.process(t), w.process(t)
		ca := &countingMembers{MemberStore: pa.members}
		cb := &countingMembers{MemberStore: pb.members}
		pa.members, pb.members = ca, cb
		join(t, pa, l, "a", n)
		join(t, pb, l, "b", n)
		l.waitBalanced(t, n, map[string]int{"a": 2, "b": 2}, 2*ttl)
		time.Sleep(2 * ttl) // settle: the last status changes are written
		terms := l.terms
		a0, b0 := ca.puts.Load(), cb.puts.Load()
		interval := clienthook.ClientParams(pa.c).RenewInterval
		const intervals = 24
		time.Sleep(intervals * interval)
		for name, got := range map[string]int64{"a": ca.puts.Load() - a0, "b": cb.puts.Load() - b0} {
			if got < intervals/2-1 || got > intervals/2+1 {
				t.Errorf("member %s wrote its unchanged status %d times in %d intervals, want about %d (every other interval)", name, got, intervals, intervals/2)
			}
		}
		if l.terms != terms {
			t.Errorf("%d terms began in a settled partition: a member looked dead between its writes", l.terms-terms)
		}
	})
}

// hangingMembers makes one process's status writes hang, until their
// context ends, while hang is set.
type hangingMembers struct {
	leader.MemberStore
	hang atomic.Bool
}

func (h *hangingMembers) PutMember(ctx context.Context, election string, m leader.Member) error {
	if h.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return h.MemberStore.PutMember(ctx, election, m)
}

// A member whose status writes hang still follows the assignment: its
// status ages out, the other member queues for its shards, and it hands
// them over. Its store calls used to wait on Run's context alone: the
// member sat in the hung write and kept its shards (its lease renewed
// fine), and the other waited for them for as long as the write hung.
func TestPartitionHandsOverWhileItsStatusWritesHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 4
		pa := w.process(t)
		ha := &hangingMembers{MemberStore: pa.members}
		pa.members = ha
		join(t, pa, l, "a", n)
		join(t, w.process(t), l, "b", n)
		l.waitBalanced(t, n, map[string]int{"a": 2, "b": 2}, 2*ttl)
		ha.hang.Store(true)
		took := l.waitBalanced(t, n, map[string]int{"a": 0, "b": 4}, 4*ttl)
		t.Logf("handed over %v after a's status writes began to hang (TTL %v)", took, ttl)
	})
}

// lastWriteMembers fails one process's status writes while down is set,
// and records when its last write succeeded.
type lastWriteMembers struct {
	leader.MemberStore
	down atomic.Bool
	mu   sync.Mutex
	last time.Time
}

func (m *lastWriteMembers) PutMember(ctx context.Context, election string, mb leader.Member) error {
	if m.down.Load() {
		return errCut
	}
	err := m.MemberStore.PutMember(ctx, election, mb)
	if err == nil {
		m.mu.Lock()
		m.last = time.Now()
		m.mu.Unlock()
	}
	return err
}

// A member counts as live for four heartbeat intervals after its last
// status write (it writes an unchanged status every other interval), and
// no longer: the others' view drops it then.
func TestPartitionMemberLiveForFourHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 4
		pa := w.process(t)
		ma := &lastWriteMembers{MemberStore: pa.members}
		pa.members = ma
		a := join(t, pa, l, "a", n)
		b := join(t, w.process(t), l, "b", n)
		l.waitBalanced(t, n, map[string]int{"a": 2, "b": 2}, 2*ttl)
		ma.down.Store(true)
		ma.mu.Lock()
		last := ma.last
		ma.mu.Unlock()
		interval := clienthook.ClientParams(pa.c).RenewInterval
		step := interval / 20
		for {
			v, err := b.p.View(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(v.Members, func(m leader.PartitionMember) bool { return m.ID == a.p.ID() }) {
				break
			}
			time.Sleep(step)
		}
		if gone := time.Since(last); gone < 4*interval || gone > 4*interval+2*step {
			t.Errorf("a left b's view %v after its last status write, want 4 heartbeat intervals (%v)", gone, 4*interval)
		}
	})
}
