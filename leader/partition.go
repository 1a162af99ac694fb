package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// A Partition is one process's membership of a sharded singleton.
//
// The singleton is n shards of one named job, spread over the live
// members by weight. Each shard is a lease of its own: an Election named
// "NAME#i" on the Partition's Client, so a hold in the election namespace
// with its own fencing token. Create it with NewPartition, run the
// per-shard work with Run, watch who owns what with Observe, and leave
// with Resign or Close.
//
// An operator drains a member with operator.Drain, when the member store
// serves operator.Directives. Its shards then move to the others, and none comes back
// until it is undrained. Each member then reads the directives once per
// heartbeat, beside the members' status.
//
// Its methods are safe for concurrent use. Its zero value is not usable:
// each of its methods panics, as misuse of a sync type does.
type Partition struct {
	name     string
	n        int
	weight   float64
	members  MemberStore
	interval time.Duration
	// release bounds the removal of this member's status when it leaves:
	// the release timeout of the shards' leases (the Client's,
	// dsync.ClientWithReleaseTimeout), as a Client bounds what it sends on
	// Close.
	release time.Duration
	// progress is each shard's progress deadline
	// (WithProgressDeadline): 0 is none.
	progress time.Duration
	self     string
	host     string
	pid      int
	shards   []*Election

	// shardsLive counts the shard goroutines (partition_shard.go), handed
	// over or not: Close and the end of Run wait for all of them, so no
	// lease is released, and no Election closed, under a running fn.
	shardsLive sync.WaitGroup

	// slowest is the longest heartbeat interval the members advertised at
	// the last read of their status (liveFor).
	slowest atomic.Int64
	// outage credits the time the members' status could not be read to
	// their age (liveFor, partition_outage.go).
	outage outageCredit

	// beat is this member's last status write (partition_status.go):
	// when it was sent and what it said. Only Run's goroutine uses it.
	beat lastBeat

	// nudge asks Run's goroutine for a tick now, not at the next
	// heartbeat: a shard's run stalled, which the others must read.
	nudge chan struct{}

	mu      sync.Mutex
	running map[int]*shardRun // shards this member waits for or owns
	closed  bool
	// stopRun ends the Run under way (nil when none), with the cause
	// ErrResigned; runDone closes once that Run has handed everything over.
	stopRun context.CancelCauseFunc
	runDone chan struct{}
}

// NewPartition returns this process's member of partition name, of shards
// shards, on c.
//
// Member status goes to the MemberStore given with WithMembers, which a
// Partition needs. It takes the options Option lists for it. It does no
// I/O.
func NewPartition(c *dsync.Client, name string, shards int, opts ...Option) (*Partition, error) {
	if c == nil {
		return nil, errors.New("leader: nil client")
	}
	if shards <= 0 || name == "" {
		return nil, fmt.Errorf("leader: a Partition needs a name and at least one shard, got %q and %d", name, shards)
	}
	cfg, err := newConfig(forPartition, opts, c)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	p := &Partition{name: name, n: shards, weight: cfg.weight, members: cfg.members, interval: cfg.heartbeatInterval, progress: cfg.progress,
		release: clienthook.ClientParams(c).ReleaseTimeout, host: host, pid: os.Getpid(), running: map[int]*shardRun{}, nudge: make(chan struct{}, 1)}
	p.outage.grace = clienthook.ClientParams(c).OutageGrace
	for i := range shards {
		e, err := NewElection(c, fmt.Sprintf("%s#%d", name, i), WithProgressDeadline(p.progress), WithLogger(cfg.logger))
		if err != nil {
			return nil, err
		}
		p.shards = append(p.shards, e)
	}
	p.self = p.shards[0].ID() + "/p"
	if h, ok := p.members.(clienthook.PartitionCarrier); ok && h.PartitionSettings().MemberID != "" {
		p.self = h.PartitionSettings().MemberID
	}
	return p, nil
}

// ID returns this member's identity in the partition's member status.
func (p *Partition) ID() string {
	p.mustBeMade()
	return p.self
}

// Run joins the partition and runs fn once per shard this member owns.
//
// Each fn runs under a context cancelled the moment that shard is lost
// or handed away (TermOf gives its term and fencing token). Run returns
// when ctx ends (its cause), after Resign or Close (ErrResigned), or with
// the first error an fn returns. It returns only after every fn has
// returned and every shard was handed over (see Resign). An fn that
// returns nil gives its shard up. The shard is queued for again while it
// stays assigned here.
//
// context.Cause of a shard's context says why it ended:
//   - ErrShardMoved, when the shard is handed over to the member it is now
//     assigned to;
//   - ErrLeadershipLost, when its lease could no longer be guaranteed
//     (wrapping dsync.ErrSuspended in an outage of the store, with an
//     outage grace: fn then runs again, in the same term with the same
//     token, once the store is back, if the outage did not end the term;
//     see Election.Campaign);
//   - what Run returns, when Run ends (ctx's cause unchanged, ErrResigned,
//     or the first error an fn returned).
//
// One Run at a time: a second one returns ErrCampaigning, and Run on a
// closed Partition ErrClosed. After Run returned, Run joins again.
func (p *Partition) Run(ctx context.Context, fn func(ctx context.Context, shard int) error) error {
	p.mustBeMade()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done, err := p.beginRun(cancel)
	if err != nil {
		return err
	}
	var errOnce sync.Once
	var ferr error
	fail := func(err error) { errOnce.Do(func() { ferr = err; cancel(err) }) }
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.tick(ctx, fn, fail)
		select {
		case <-ctx.Done():
			p.leave(ctx, done)
			if ferr != nil {
				return ferr
			}
			return context.Cause(ctx)
		case <-t.C:
		case <-p.nudge:
		}
	}
}

// tick heartbeats, reads the members, and starts or stops shards to match
// the assignment. When it queued for a shard it heartbeats again, so that
// the shard's owner sees the claim waiting (and hands the shard over) at
// its next tick rather than the one after.
//
// Each of its store calls has a deadline of its own (storeDeadline), and a
// status write that failed does not skip the rest: a store slow to answer
// must not freeze the member, which still follows the assignment the
// others' status gives (hands a shard over to its assigned owner, stops
// waiting for shards assigned elsewhere). A member whose call hung on Run's
// context alone kept its shards, while its status aged out and the others
// queued for them, until the call came back.
func (p *Partition) tick(ctx context.Context, fn func(context.Context, int) error, fail func(error)) {
	_ = p.withDeadline(ctx, p.heartbeat)
	var ms []Member
	var drained map[string]bool
	err := p.withDeadline(ctx, func(ctx context.Context) (err error) {
		ms, drained, err = p.readStatus(ctx)
		return err
	})
	if err != nil {
		p.outage.failed(time.Now())
		return // a tick that cannot tell who is drained must not assign
	}
	p.outage.read(time.Now(), p.statusLife())
	if !slices.ContainsFunc(ms, func(m Member) bool { return m.ID == p.self }) && !p.beat.sent.IsZero() {
		// Its status is gone (a late DeleteMember of an earlier Run, or
		// a write that failed): write it again now, not up to two
		// intervals later.
		p.beat = lastBeat{}
		_ = p.withDeadline(ctx, p.heartbeat)
	}
	st := p.decode(p.withOwnStatus(ms), drained)
	want := st.assign(p.n)
	if p.apply(ctx, want, st.waiting, fn, fail) {
		_ = p.withDeadline(ctx, p.heartbeat)
	}
}

// withDeadline runs one store call of a tick under ctx bounded by
// storeDeadline.
func (p *Partition) withDeadline(ctx context.Context, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.storeDeadline())
	defer cancel()
	return call(ctx)
}

// storeDeadline bounds each store call of a tick: two heartbeat
// intervals, so that a slow store's answers still count (the calls of a
// loaded embedded server take seconds at times), and a tick whose store
// hangs ends within about four intervals, the time its status stays live.
func (p *Partition) storeDeadline() time.Duration { return 2 * p.interval }

// apply starts and stops shards to match want, and reports whether it
// queued for any.
func (p *Partition) apply(ctx context.Context, want []string, waiting []map[string]bool, fn func(context.Context, int) error, fail func(error)) (queued bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s, owner := range want {
		r := p.running[s]
		switch {
		case r != nil && r.stalled:
			// Its lease is released and its run has not returned: nothing
			// to start or stop until it does (forget).
		case owner == p.self && r == nil:
			p.startLocked(ctx, s, fn, fail)
			queued = true
		case owner != p.self && r != nil && !r.owned:
			r.cancel() // stop waiting for a shard assigned elsewhere
			delete(p.running, s)
		case owner != p.self && r != nil && r.owned && waiting[s][owner]:
			// The desired owner is queued: release, and its claim is next.
			r.cancel()
			delete(p.running, s)
		}
	}
	return queued
}
