package leader

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/go-dsync/dsync/leader/internal/shard"
)

// What a Partition's members tell each other, and what Observe shows of
// it: each member's status (Member.Value) holds its weight and the shards
// it owns (with their tokens) or waits for.

// partitionStatus is what a member advertises in its member status (Value):
// its weight, the shards it owns and those it waits for. Every member reads
// all of them once per heartbeat to compute the same assignment.
type partitionStatus struct {
	Weight float64  `json:"w"`
	Owns   []int    `json:"own,omitempty"`
	Tokens []uint64 `json:"tok,omitempty"` // Tokens[i] is the token of shard Owns[i]
	Waits  []int    `json:"wait,omitempty"`
	// Stalled are the shards whose run stalled here (its work reported no
	// progress within its deadline: WithProgressDeadline) and has
	// not returned: their leases are released, and no member assigns
	// them here until the run returns (shard.AssignAvoiding).
	Stalled []int `json:"stall,omitempty"`
	// Heartbeat is the member's heartbeat interval, which its unchanged
	// status is written by (liveFor); absent from the status of releases
	// that did not write it.
	Heartbeat time.Duration `json:"hb,omitempty"`
}

// A PartitionView is a Partition as its members last reported it.
// It says who owns each shard, and which members are live. Each member
// writes its status when it changes, and otherwise every other heartbeat.
type PartitionView struct {
	// Shards has one entry per shard, by shard number.
	Shards []ShardOwner
	// Members are the live members (a status written within four
	// heartbeat intervals: see liveFor; after an outage of the store
	// that this member could not read through, that outage's time, up to
	// the Client's outage grace, is not counted), ordered by ID.
	Members []PartitionMember
}

// ShardOwner is one shard in a PartitionView.
type ShardOwner struct {
	// Member is the ID (Partition.ID) of the member that reported owning
	// the shard, "" if none did. When two report it (the old owner's
	// report is older than the handover) the one of the higher token is
	// shown.
	//
	// A view is the members' last reports, not a history, so a later
	// view can show an older owner and token: when the owner of the
	// higher token stops reporting the shard (its run ended or stalled,
	// or it left) while an older owner's last report still counts (its
	// later status writes failed), that report shows again until it ages
	// out, four heartbeat intervals after its write. Fence writes with
	// the token fn got (TermOf), never with a view's.
	Member string
	// Token is the fencing token of Member's term of the shard, as it
	// reported it (TermOf(ctx).Token in its fn); 0 if not reported.
	Token uint64
	// Assigned is the member that should own the shard, as every member
	// computes it from this view: Member, once balanced; while it
	// differs, the shard is being handed over.
	Assigned string
}

// PartitionMember is a live member in a PartitionView.
type PartitionMember struct {
	ID     string  // Partition.ID
	Weight float64 // WithWeight
	Host   string  // host name of its process
	PID    int     // process id
	// Draining: an operator drained it (operator.Drain), so no shard is assigned
	// to it; the shards it still owns are moving to the others.
	Draining bool
}

// memberStatuses is the members' decoded status: the live members with
// their weights, the owner of each shard and who waits for which.
type memberStatuses struct {
	live    []shard.Member
	view    PartitionView
	waiting []map[string]bool
	stalled []map[string]bool // by shard: the members whose run of it stalled
	drained map[string]bool   // the members drained (operator.Drain)
	slowest time.Duration     // the longest heartbeat interval among them
}

// avoids reports whether member id's run of shard s stalled and has not
// returned, so that the shard is assigned elsewhere.
func (st *memberStatuses) avoids(s int, id string) bool {
	return st.stalled[s][id] || st.drainAvoids(s, id)
}

// assign is the assignment every member computes from st.
func (st *memberStatuses) assign(n int) []string {
	return shard.AssignAvoiding(n, st.live, st.owners(), st.avoids)
}

// owners returns the ID of each shard's owner ("" for none).
func (st *memberStatuses) owners() []string {
	out := make([]string, len(st.view.Shards))
	for s, o := range st.view.Shards {
		out[s] = o.Member
	}
	return out
}

// decode decodes the members' status, with drained the members drained,
// and fills each shard's Assigned. Members whose status is not a
// partition's are left out.
func (p *Partition) decode(ms []Member, drained map[string]bool) *memberStatuses {
	st := &memberStatuses{view: PartitionView{Shards: make([]ShardOwner, p.n)}, waiting: make([]map[string]bool, p.n), stalled: make([]map[string]bool, p.n), drained: drained}
	for _, m := range ms {
		var ps partitionStatus
		if json.Unmarshal([]byte(m.Value), &ps) != nil {
			continue
		}
		st.slowest = max(st.slowest, ps.Heartbeat)
		st.live = append(st.live, shard.Member{ID: m.ID, Weight: drainWeight(drained, m.ID, ps.Weight)})
		st.view.Members = append(st.view.Members, PartitionMember{ID: m.ID, Weight: ps.Weight, Host: m.Host, PID: m.PID, Draining: drained[m.ID]})
		for i, s := range ps.Owns {
			if s < 0 || s >= p.n {
				continue
			}
			var tok uint64
			if i < len(ps.Tokens) {
				tok = ps.Tokens[i]
			}
			if cur := &st.view.Shards[s]; cur.Member == "" || tok > cur.Token {
				cur.Member, cur.Token = m.ID, tok
			}
		}
		mark(st.waiting, ps.Waits, m.ID)
		mark(st.stalled, ps.Stalled, m.ID)
	}
	slices.SortFunc(st.view.Members, func(a, b PartitionMember) int { return cmp.Compare(a.ID, b.ID) })
	for s, id := range st.assign(p.n) {
		st.view.Shards[s].Assigned = id
	}
	p.slowest.Store(int64(st.slowest)) // for the next read (liveFor)
	return st
}

// mark sets by[s][id] for each shard s of shards within by's range.
func mark(by []map[string]bool, shards []int, id string) {
	for _, s := range shards {
		if s >= 0 && s < len(by) {
			if by[s] == nil {
				by[s] = map[string]bool{}
			}
			by[s][id] = true
		}
	}
}

// lastBeat is a member's last status write that succeeded: when it was
// sent, on this process's clock, and the status it wrote.
type lastBeat struct {
	sent   time.Time
	status string
}

// liveFor is how long after its last status write a member counts as
// live: four intervals. An unchanged status is written every other
// interval (heartbeat), so a member stays live through two intervals of
// delay, as it did when it wrote every interval and counted for three.
//
// The interval is the longest among this member's and those the members
// advertised at the last read (partitionStatus.Heartbeat): a member
// writes by its own interval, so one that judged the others by its own,
// shorter one took a member of a longer one (a Client of a longer TTL)
// for gone between that member's writes, and queued for its shards.
// Every member so judges every other by the same, slowest, interval.
//
// After an outage of the store, the time this member could not read the
// members' status is added, for a while (partition_outage.go).
func (p *Partition) liveFor() time.Duration {
	return p.statusLife() + p.outage.at(time.Now())
}

// statusLife is liveFor without an outage's credit.
func (p *Partition) statusLife() time.Duration {
	return 4 * max(p.interval, time.Duration(p.slowest.Load()))
}

// refreshAfter is how old the last write of an unchanged status may be
// before a tick writes it again: one and a half intervals, so that every
// other tick writes even when ticks come early or late by up to half an
// interval.
func (p *Partition) refreshAfter() time.Duration { return p.interval + p.interval/2 }

// heartbeat writes this member's status (weight, owned and awaited
// shards) when it differs from the last one written, or when that write
// is older than refreshAfter. Writing an unchanged status only every other
// interval halves what a member of a settled partition writes: with its
// lease's renewal and its read of the members, that is its whole steady
// cost (issue 45).
func (p *Partition) heartbeat(ctx context.Context) error {
	b := p.ownStatus()
	now := time.Now()
	if p.beat.status == string(b) && now.Sub(p.beat.sent) < p.refreshAfter() {
		return nil
	}
	if err := p.members.PutMember(ctx, p.name, Member{ID: p.self, Host: p.host, PID: p.pid, Value: string(b)}); err != nil {
		// The write may still land, late (rule 11): the next tick writes
		// whatever the status is then, even the one last written.
		p.beat = lastBeat{}
		return err
	}
	p.beat = lastBeat{sent: now, status: string(b)}
	return nil
}

// ownStatus is this member's status as it is now, encoded as heartbeat
// writes it: its weight, the shards it owns (with their tokens) and those
// it waits for.
func (p *Partition) ownStatus() []byte {
	st := partitionStatus{Weight: p.weight, Heartbeat: p.interval}
	p.mu.Lock()
	for s := range p.n {
		switch r := p.running[s]; {
		case r == nil:
		case r.listedStalled():
			st.Stalled = append(st.Stalled, s)
		case r.owned:
			st.Owns = append(st.Owns, s)
			st.Tokens = append(st.Tokens, r.token)
		default:
			st.Waits = append(st.Waits, s)
		}
	}
	p.mu.Unlock()
	b, _ := json.Marshal(st)
	return b
}

// withOwnStatus returns ms with this member's status as it is now
// (ownStatus) in place of the one read: what it owns is known here, and
// the copy in the store can lag by up to an interval, after a shard won or
// handed over since the last write. Deciding on the lagging copy, a member
// that had just been handed shards counted them as the old owner's (whose
// status lagged too) and queued for more than its share of a leaver's
// shards, each of which then moved twice. ms is not changed.
//
// When its status is not among ms (it aged out: its writes failed or
// landed late), the member is not live to the others, which take its
// shards, and it assigns itself none. But when ms lists nobody, every
// member's writes failed alike (a store too slow for them all, beside
// CPU burners): nobody else will take a shard, and a member that left
// itself out too stopped waiting for the shards it had queued for and
// queued for none, so that shards lost with their leases stayed unowned
// for as long as the store was slow. It then counts itself, alone.
func (p *Partition) withOwnStatus(ms []Member) []Member {
	i := slices.IndexFunc(ms, func(m Member) bool { return m.ID == p.self })
	if i < 0 && len(ms) == 0 {
		return []Member{{ID: p.self, Host: p.host, PID: p.pid, Value: string(p.ownStatus())}}
	}
	if i < 0 {
		return ms
	}
	out := slices.Clone(ms)
	out[i].Value = string(p.ownStatus())
	return out
}

// View reads the members' status once and returns the partition as they
// last reported it. It needs no Run: any process with the member store
// can watch a partition.
func (p *Partition) View(ctx context.Context) (PartitionView, error) {
	p.mustBeMade()
	ms, drained, err := p.readStatus(ctx)
	if err != nil {
		return PartitionView{}, err
	}
	return p.decode(ms, drained).view, nil
}

// Observe returns a channel that receives the partition's view (View) when
// it changes.
//
// A view is sent whenever it differs from the last one sent: a shard
// changed owner or token, a member joined, left or changed weight. It
// reads the members' status once per heartbeat interval
// (WithHeartbeatInterval). A member writes its status as soon as it
// changes, so a change of owner shows within about two intervals. A
// member that crashed leaves the view four intervals after its last
// write (of the longest interval among the members, when they differ).
//
// The channel is unbuffered and keeps no backlog. Changes between two
// reads, or while the receiver does not read, are coalesced into the next
// view sent, which is the state at one read, not a log of changes. Failed
// reads are skipped. Unlike Election.Observe's, a shard's token in
// successive views can go back (ShardOwner.Member says when). The channel
// is closed when ctx ends, which is how the goroutine behind it stops.
// Observe needs no Run.
func (p *Partition) Observe(ctx context.Context) <-chan PartitionView {
	p.mustBeMade()
	ch := make(chan PartitionView)
	go func() {
		defer close(ch)
		var last *PartitionView
		for {
			v, err := p.View(ctx)
			if err == nil && (last == nil || !v.equal(*last)) {
				select {
				case ch <- v:
					last = &v
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.interval):
			}
		}
	}()
	return ch
}

func (v PartitionView) equal(w PartitionView) bool {
	return slices.Equal(v.Shards, w.Shards) && slices.Equal(v.Members, w.Members)
}
