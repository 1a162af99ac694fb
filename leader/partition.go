package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader/internal/shard"
)

// A Partition is one process's membership of a sharded singleton: n
// shards of one named job, each a lease of its own (an Election named
// "NAME#i" on the Partition's Client, so a hold in the election
// namespace with its own fencing token), spread over the live members by
// weight. Create it with NewPartition and run the per-shard work with Run.
type Partition struct {
	name     string
	n        int
	weight   float64
	members  MemberStore
	interval time.Duration
	self     string
	shards   []*Election

	mu      sync.Mutex
	running map[int]*shardRun // shards this member waits for or owns
	closed  bool
}

// shardRun is one shard this member has queued for: cancel ends its
// campaign, or its term, and done closes once the shard's goroutine is over.
type shardRun struct {
	cancel context.CancelFunc
	owned  bool // the campaign won, and fn runs (or is about to)
	// leaving: the campaign's context was cancelled while it waited; a
	// campaign won meanwhile has its lease released, so fn must not run.
	// owned and leaving are decided under Partition.mu, one or the other.
	leaving bool
	done    chan struct{}
}

// A PartitionOption configures a Partition.
type PartitionOption func(*Partition)

// WithWeight sets this member's weight (default 1): a member of weight 2
// takes twice the shards of one of weight 1.
func WithWeight(w float64) PartitionOption { return func(p *Partition) { p.weight = w } }

// WithPartitionHeartbeat sets how often the member refreshes its status and
// recomputes the assignment (default: the Client's renew interval). A
// member counts as live for three intervals after its last heartbeat.
func WithPartitionHeartbeat(d time.Duration) PartitionOption {
	return func(p *Partition) { p.interval = d }
}

// partitionStatus is what a member advertises in its member status (Value):
// its weight, the shards it owns and those it waits for. Every member reads
// all of them once per heartbeat to compute the same assignment.
type partitionStatus struct {
	Weight float64 `json:"w"`
	Owns   []int   `json:"own,omitempty"`
	Waits  []int   `json:"wait,omitempty"`
}

// NewPartition returns this process's member of partition name, of shards
// shards, on c; member status goes to ms. It does no I/O.
func NewPartition(c *dsync.Client, ms MemberStore, name string, shards int, opts ...PartitionOption) (*Partition, error) {
	if shards <= 0 || ms == nil || name == "" {
		return nil, errors.New("leader: a Partition needs a name, a MemberStore and at least one shard")
	}
	p := &Partition{name: name, n: shards, weight: 1, members: ms, interval: c.RenewInterval(), running: map[int]*shardRun{}}
	for _, o := range opts {
		o(p)
	}
	for i := range shards {
		e, err := NewElection(c, fmt.Sprintf("%s#%d", name, i))
		if err != nil {
			return nil, err
		}
		p.shards = append(p.shards, e)
	}
	p.self = p.shards[0].ID() + "/p"
	return p, nil
}

// ID returns this member's identity in the partition's member status.
func (p *Partition) ID() string { return p.self }

// Run joins the partition and runs fn once per shard this member owns,
// under a context cancelled the moment that shard is lost or handed away
// (TermOf gives its term and fencing token). It returns when ctx ends, or
// with the first error an fn returns, after every fn has returned and every
// shard was handed over. An fn that returns nil gives its shard up; the
// shard is queued for again while it stays assigned here.
func (p *Partition) Run(ctx context.Context, fn func(ctx context.Context, shard int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var errOnce sync.Once
	var ferr error
	fail := func(err error) { errOnce.Do(func() { ferr = err; cancel(err) }) }
	defer p.stopAll()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.tick(ctx, fn, fail)
		select {
		case <-ctx.Done():
			p.stopAll()
			_ = p.members.DeleteMember(context.WithoutCancel(ctx), p.name, p.self)
			if ferr != nil {
				return ferr
			}
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// tick heartbeats, reads the members, and starts or stops shards to match
// the assignment.
func (p *Partition) tick(ctx context.Context, fn func(context.Context, int) error, fail func(error)) {
	if err := p.heartbeat(ctx); err != nil {
		return
	}
	ms, err := p.members.Members(ctx, p.name, 3*p.interval)
	if err != nil {
		return
	}
	live, current, waiting := p.view(ms)
	want := shard.Assign(p.n, live, current)
	p.mu.Lock()
	defer p.mu.Unlock()
	for s, owner := range want {
		r := p.running[s]
		switch {
		case owner == p.self && r == nil:
			p.startLocked(ctx, s, fn, fail)
		case owner != p.self && r != nil && !r.owned:
			r.cancel() // stop waiting for a shard assigned elsewhere
			delete(p.running, s)
		case owner != p.self && r != nil && r.owned && waiting[s][owner]:
			// The desired owner is queued: release, and its claim is next.
			r.cancel()
			delete(p.running, s)
		}
	}
}

// view decodes the members' status: the live members with their weights,
// the owner of each shard, and who waits for which.
func (p *Partition) view(ms []Member) ([]shard.Member, []string, []map[string]bool) {
	current := make([]string, p.n)
	waiting := make([]map[string]bool, p.n)
	var live []shard.Member
	for _, m := range ms {
		var st partitionStatus
		if json.Unmarshal([]byte(m.Value), &st) != nil {
			continue
		}
		live = append(live, shard.Member{ID: m.ID, Weight: st.Weight})
		for _, s := range st.Owns {
			if s >= 0 && s < p.n {
				current[s] = m.ID
			}
		}
		for _, s := range st.Waits {
			if s >= 0 && s < p.n {
				if waiting[s] == nil {
					waiting[s] = map[string]bool{}
				}
				waiting[s][m.ID] = true
			}
		}
	}
	return live, current, waiting
}

// heartbeat writes this member's status: weight, owned and awaited shards.
func (p *Partition) heartbeat(ctx context.Context) error {
	st := partitionStatus{Weight: p.weight}
	p.mu.Lock()
	for s, r := range p.running {
		if r.owned {
			st.Owns = append(st.Owns, s)
		} else {
			st.Waits = append(st.Waits, s)
		}
	}
	p.mu.Unlock()
	slices.Sort(st.Owns)
	slices.Sort(st.Waits)
	b, _ := json.Marshal(st)
	return p.members.PutMember(ctx, p.name, Member{ID: p.self, Value: string(b)})
}

// startLocked queues for shard s and runs fn while this member owns it.
// The campaign runs under a context of its own, not Run's: the Election
// releases a lease at once when its campaign context ends, so a term may
// end only after fn returned (then Resign), never before.
func (p *Partition) startLocked(ctx context.Context, s int, fn func(context.Context, int) error, fail func(error)) {
	sctx, cancelCampaign := context.WithCancel(context.WithoutCancel(ctx))
	stop := make(chan struct{})
	var once sync.Once
	r := &shardRun{cancel: func() { once.Do(func() { close(stop) }) }, done: make(chan struct{})}
	p.running[s] = r
	go func() {
		defer close(r.done)
		defer cancelCampaign()
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			}
			p.mu.Lock()
			leave := !r.owned
			r.leaving = leave
			p.mu.Unlock()
			if leave {
				cancelCampaign() // still waiting: leave the queue
			}
		}()
		tctx, err := campaignShard(sctx, p.shards[s])
		if err != nil {
			p.forget(s, r)
			return
		}
		if partitionWonHook != nil {
			partitionWonHook(s)
		}
		p.mu.Lock()
		if r.leaving {
			// Won as the wait was given up: its context is cancelled, so
			// the Election releases the lease; fn must not run beside
			// the next owner.
			p.mu.Unlock()
			_ = p.shards[s].Resign(context.WithoutCancel(ctx))
			p.forget(s, r)
			return
		}
		r.owned = true
		p.mu.Unlock()
		fctx, cancelFn := context.WithCancel(tctx)
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			case <-fctx.Done():
			}
			cancelFn()
		}()
		err = fn(fctx, s)
		cancelFn()
		_ = p.shards[s].Resign(context.WithoutCancel(ctx))
		p.forget(s, r)
		if err != nil && tctx.Err() == nil {
			fail(err)
		}
	}()
}

// partitionWonHook, if set (by tests only), is called right after a shard's
// campaign is won, before the run decides whether fn may run.
var partitionWonHook func(shard int)

// forget drops r from the running shards if it is still s's.
func (p *Partition) forget(s int, r *shardRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[s] == r {
		delete(p.running, s)
	}
}

// stopAll hands every shard over and waits for their fns to return.
func (p *Partition) stopAll() {
	p.mu.Lock()
	runs := make([]*shardRun, 0, len(p.running))
	for _, r := range p.running {
		r.cancel()
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		<-r.done
	}
}

// Close hands every shard over and closes the shards' elections. Cancel
// Run's context first; Close does not wait for it.
func (p *Partition) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.stopAll()
	var errs []error
	for _, e := range p.shards {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}
