package apisim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// The partition actor: members of one leader.Partition join, run a
// function per shard they own, and leave gracefully (Run's context
// cancelled, then Close), or crash (their Client cut off from the store
// at once, so that their leases are abandoned and expire, and their
// member status ages out), on the simulated processes and under their
// faults (a process's pause freezes its members' requests and lease
// timers; a restart crashes them). CheckPartition judges what they did.

// Outcomes of a membership, as its Action records it (Key: the member's
// ID; Call: when it joined; Return: when it began to leave or crashed).
const (
	memberLeft    = "left"
	memberCrashed = "crashed"
)

// PartitionActorName names the partition actor's actions.
const PartitionActorName = "partition"

// partitionName is the simulated partition's name.
const partitionName = "part"

// Term is one term of a shard as its member saw it: its function ran from
// Start to End.
type Term struct {
	Proc   int
	Member string
	Shard  int
	// Token is TermOf's token for the function's context (0: none).
	Token uint64
	// Start is when the function began; Lost when its context ended;
	// End when it returned, or its member crashed, whichever came first
	// (a paused process runs no code: it returns when the process
	// resumes). Zero: never (the run ended first).
	Start, Lost, End time.Time
	// Deadline is the latest the term's lease could be valid, by the
	// oracle (as Hold's; zero: no claim of its token was seen).
	Deadline time.Time
	Era      int
	// Stalled: its member's progress deadline ended it (Lost), and its
	// function kept working after (till End), as stuck work does.
	Stalled bool
}

// validEnd is when the term stopped being a valid owner: when its
// function returned, or its lease's deadline or its stall if that came
// first.
func (t *Term) validEnd() time.Time {
	end := t.End
	if end.IsZero() {
		end = farFuture
	}
	if !t.Deadline.IsZero() && t.Deadline.Before(end) {
		end = t.Deadline
	}
	if t.Stalled && !t.Lost.IsZero() && t.Lost.Before(end) {
		end = t.Lost
	}
	return end
}

func (t *Term) String() string {
	return fmt.Sprintf("p%d %s shard %d #%d [%v, %v) lost %v deadline %v era %d", t.Proc, t.Member, t.Shard, t.Token,
		t.Start.Format(tf), t.End.Format(tf), t.Lost.Format(tf), t.Deadline.Format(tf), t.Era)
}

// PartitionSim is a seed's partition actor: its Actor, and what its
// checker needs to know of the processes' configuration.
type PartitionSim struct {
	Shards int
	// Calm: the run is calm (Options.Calm), and CheckPartition judges
	// ownership, balance and moves; otherwise only the safety promises
	// (one valid owner, tokens), as the liveness ones are for a network
	// that works.
	Calm bool

	// Drains: an operator now and then drains a live member, or undrains
	// one (drain.go), and CheckPartition judges PromiseDrain.
	Drains bool

	// Progress: half the members have a progress deadline for their
	// shards' runs (progress.go), a third of which stall.
	Progress bool

	// StayMin and StayMax bound how many TTLs a member stays, drawn in
	// between (default 5 and 30).
	StayMin, StayMax int

	mu     sync.Mutex
	maxTTL time.Duration
	maxHB  time.Duration
	spans  map[time.Duration]bool // the processes' bucket spans
	// spansDisagree: processes disagree on the bucket span, and those
	// refused (ErrSpan) cannot campaign for a shard they are assigned.
	spansDisagree bool
	live          map[int]bool // processes with a member now: one at most each
	joins         map[int]int  // memberships each process began
	drains        drainOperator

	// writes, if set (by a test that debugs a seed), is told of each
	// member status write and removal a member sends, with its outcome,
	// as it returns. (A goroutine that polled the statuses changed the
	// run's scheduling enough that a failing seed did not fail again.)
	writes func(at time.Time, line string)
}

// Actor returns the partition as an Actor of a run (one per seed): a
// worker's operation is a membership, for a few TTLs.
func (ps *PartitionSim) Actor(share float64) Actor {
	return Actor{
		Name:  PartitionActorName,
		Share: share,
		Start: func(env *Env) func(ctx context.Context, who string) {
			ps.mu.Lock()
			ps.maxTTL = max(ps.maxTTL, env.TTL())
			if ps.spans == nil {
				ps.spans = map[time.Duration]bool{}
			}
			ps.spans[env.inc.p.cfg.Span] = true
			ps.spansDisagree = len(ps.spans) > 1
			ps.mu.Unlock()
			ps.startWatchers(env)
			return func(ctx context.Context, who string) {
				if !ps.Drains || !ps.drainOp(ctx, env, who) {
					ps.member(ctx, env, who)
				}
			}
		},
		Check: ps.Check,
	}
}

// member is one membership: it joins, stays a while, and leaves or
// crashes.
func (ps *PartitionSim) member(ctx context.Context, env *Env, who string) {
	p := env.inc.p
	ps.mu.Lock()
	if ps.live == nil {
		ps.live = map[int]bool{}
	}
	if ps.live[p.id] {
		ps.mu.Unlock()
		return
	}
	ps.live[p.id] = true
	if ps.joins == nil {
		ps.joins = map[int]int{}
	}
	ps.joins[p.id]++
	// Drawn from the seed, not at random (as NewPartition's are), so that
	// a seed assigns the shards alike each time it runs: the IDs rank
	// the members for each shard.
	id := fmt.Sprintf("s%d-p%d-%d", p.w.seed, p.id, ps.joins[p.id])
	ps.mu.Unlock()
	defer func() {
		ps.mu.Lock()
		delete(ps.live, p.id)
		ps.mu.Unlock()
	}()
	dead := new(atomic.Bool)
	c, err := memberClient(p, dead)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// Half the members have a progress deadline for their shards' runs
	// (progress.go), in the runs that ask for it.
	var d time.Duration
	if ps.Progress && env.Chance(0.5) {
		d = max(env.Rand(3*env.TTL()/10, 2*env.TTL()), dsync.MinTTL)
	}
	part, err := leader.NewPartition(c, partitionName, ps.Shards, leader.WithMembers(&memberStore{MemberStore: p.w.members, p: p, dead: dead, id: id, writes: ps.writes}), leader.WithProgressDeadline(d))
	if err != nil {
		panic(err)
	}
	ps.mu.Lock()
	ps.maxHB = max(ps.maxHB, clienthook.ClientParams(c).RenewInterval)
	ps.mu.Unlock()
	a := &Action{Who: who, Key: part.ID(), Call: time.Now()}
	var (
		mu      sync.Mutex
		terms   = map[*Term]bool{} // the member's terms under way
		crashed bool
	)
	fn := func(fctx context.Context, s int) error {
		t := &Term{Proc: p.id, Member: part.ID(), Shard: s, Start: time.Now()}
		if info, ok := leader.TermOf(fctx); ok {
			t.Token = info.Token
		}
		mu.Lock()
		if crashed {
			mu.Unlock()
			return nil
		}
		terms[t] = true
		mu.Unlock()
		p.w.mu.Lock()
		t.Era = len(p.w.hist.Emptyings)
		p.w.hist.Terms = append(p.w.hist.Terms, t)
		p.w.mu.Unlock()
		stalled := false
		if d > 0 {
			stalled = shardWork(fctx, env, d)
		}
		<-fctx.Done()
		lost := time.Now()
		if stalled {
			p.w.mu.Lock()
			t.Stalled, t.Lost = true, lost
			p.w.mu.Unlock()
			// Stuck work goes on until it comes unstuck, or its process
			// restarts: the shard is taken elsewhere meanwhile.
			sleepCtx(env.inc.ctx, env.Rand(env.TTL(), 6*env.TTL()))
		}
		_ = p.waitRunning(context.Background()) // a paused process runs no code
		mu.Lock()
		if terms[t] {
			delete(terms, t)
			p.w.mu.Lock()
			t.Lost, t.End = lost, time.Now()
			p.w.mu.Unlock()
		}
		mu.Unlock()
		return nil
	}
	rctx, leave := context.WithCancel(context.WithoutCancel(ctx))
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = part.Run(rctx, fn)
	}()
	lo, hi := ps.StayMin, ps.StayMax
	if lo == 0 || hi == 0 {
		lo, hi = 5, 30
	}
	stay := env.Rand(time.Duration(lo)*env.TTL(), time.Duration(hi)*env.TTL())
	select {
	case <-time.After(stay):
	case <-ctx.Done():
	}
	// A restart of the process crashes its members, and so do a few
	// members of their own; the operator's wish to empty the collections
	// asks them to leave.
	crash := env.inc.ctx.Err() != nil || ctx.Err() == nil && env.Chance(0.3)
	if !crash {
		_ = p.waitRunning(context.Background()) // a paused process runs no code
	}
	now := time.Now()
	a.Return, a.Outcome = now, memberLeft
	if crash {
		a.Outcome = memberCrashed
		dead.Store(true)
		mu.Lock()
		crashed = true
		p.w.mu.Lock()
		for t := range terms {
			t.End = now // the process is gone: its functions with it
		}
		p.w.mu.Unlock()
		clear(terms)
		mu.Unlock()
	}
	env.Record(a)
	leave()
	<-ran
	_ = part.Close()
}

// shardWork is a shard's function's work under a progress deadline of
// d: it reports progress (leader.Progress) every 0 to d/2, and on a
// third of the terms stops reporting at some point, until fctx ends. It
// reports whether the term was stalled.
func shardWork(fctx context.Context, env *Env, d time.Duration) bool {
	stops := env.Chance(0.3)
	stopAt := time.Now().Add(env.Rand(0, 4*env.TTL()))
	for fctx.Err() == nil {
		if stops && time.Now().After(stopAt) {
			env.inc.p.w.count("partition shard stopped reporting")
			<-fctx.Done()
			break
		}
		sleepCtx(fctx, env.Rand(0, d/2))
		// A paused process runs no code: it reports when it resumes.
		if env.WaitRunning(fctx) != nil {
			break
		}
		leader.Progress(fctx)
	}
	stalled := errors.Is(context.Cause(fctx), leader.ErrStalled)
	if stalled {
		env.inc.p.w.count("partition shard stalled")
	}
	return stalled
}

// finishTerms gives each term its lease's deadline, by the oracle.
// Called with w.mu held.
func (w *world) finishTerms() {
	key := func(s int) string { return storedElection(fmt.Sprintf("%s#%d", partitionName, s)) }
	for _, t := range w.hist.Terms {
		if t.Token == 0 {
			continue
		}
		p := w.procs[t.Proc]
		if c, ok := p.claimAt(claimKey{key(t.Shard), t.Token}, t.Start); ok {
			if l := p.leases[c.session]; l != nil {
				t.Deadline = l.expiryAt(t.Start)
			}
		}
	}
}
