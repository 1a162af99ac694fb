package harness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// partTracker follows who owns which shard of a partition run, from the
// members' start and end reports.
type partTracker struct {
	g          *group
	owner      []int    // each shard's owner after the last change settled
	token      []uint64 // each shard's last token seen
	termOf     []int    // the member that started each shard's last token
	takenBack  int      // starts with the shard's last token, by its member
	hb         time.Duration
	limit      time.Duration // a change not balanced by then is an error
	violations int
}

func newPartTracker(g *group, shards int, ttl time.Duration) *partTracker {
	pt := &partTracker{g: g, owner: make([]int, shards), token: make([]uint64, shards), termOf: make([]int, shards), hb: ttl / 3, limit: 10*ttl + time.Minute}
	for s := range pt.owner {
		pt.owner[s], pt.termOf[s] = -1, -1
	}
	return pt
}

// joined waits for member i's "joined" and returns its Mono time; the
// member's heartbeat interval is kept.
func (pt *partTracker) joined(ctx context.Context, i int) (int64, error) {
	m, err := pt.g.wait(ctx, "joined", i, time.Minute)
	if err != nil {
		return 0, err
	}
	if len(m.args) > 1 && m.args[1] > 0 {
		pt.hb = time.Duration(m.args[1])
	}
	return m.args[0], nil
}

// settle reads the members' reports from the change at t0 on (members in
// gone were killed then) until the shards are balanced over members and
// no report came for two heartbeats. It returns what the change did and
// the fewest shards it had to move.
func (pt *partTracker) settle(ctx context.Context, t0 int64, members, gone []int) (partChange, int, error) {
	before := slices.Clone(pt.owner)
	least := partMinMoves(before, members)
	quiet := 2*pt.hb + 300*time.Millisecond
	deadline := time.Now().Add(pt.limit)
	var evs []partEvent
	for {
		ch := replayPartition(before, gone, t0, evs)
		balanced := partBalanced(ch.after, members)
		wait := time.Until(deadline)
		if balanced {
			wait = min(wait, quiet)
		}
		m, ok, err := pt.g.next(ctx, []string{"start", "end"}, wait)
		if err != nil {
			return ch, least, err
		}
		if !ok {
			if !balanced {
				return ch, least, fmt.Errorf("not balanced within %v: owners %v", pt.limit, ch.after)
			}
			pt.owner = ch.after
			pt.check(evs)
			pt.violations += ch.overlaps
			return ch, least, nil
		}
		if len(m.args) < 3 {
			return ch, least, fmt.Errorf("process %d: bad report %q", m.proc, m.text)
		}
		evs = append(evs, partEvent{member: m.proc, shard: int(m.args[0]), token: uint64(m.args[1]), start: m.kind == "start", at: m.args[2]})
	}
}

// check counts, as violations, the starts whose token is not above the
// shard's last, but a start with the last token by the member whose term
// it is: the term taken back after an outage of the store (or a machine
// too busy for anyone to renew, which the store's record cannot tell
// from one), which the leader package documents, same token and nobody
// between.
func (pt *partTracker) check(evs []partEvent) {
	evs = slices.Clone(evs)
	slices.SortStableFunc(evs, func(a, b partEvent) int { return cmp.Compare(a.at, b.at) })
	for _, e := range evs {
		if !e.start || e.shard < 0 || e.shard >= len(pt.token) {
			continue
		}
		last := pt.token[e.shard]
		takenBack := e.token == last && pt.termOf[e.shard] == e.member
		if e.token <= last && !takenBack {
			pt.violations++
		}
		if takenBack {
			pt.takenBack++
		}
		pt.token[e.shard], pt.termOf[e.shard] = e.token, e.member
	}
}

// next returns the earliest message of one of kinds from any Client; ok is
// false if none came within timeout. An "error" message, or an exit of a
// process not killed on purpose, is an error.
func (g *group) next(ctx context.Context, kinds []string, timeout time.Duration) (msg, bool, error) {
	match := func(m msg) (bool, error) {
		switch {
		case m.kind == "error":
			return true, fmt.Errorf("process %d: %s", m.proc, m.text)
		case m.kind == "exited" && !g.killed[m.proc]:
			return true, fmt.Errorf("process %d exited unexpectedly", m.proc)
		}
		return slices.Contains(kinds, m.kind), nil
	}
	for i, m := range g.pending {
		if ok, err := match(m); ok {
			g.pending = append(g.pending[:i:i], g.pending[i+1:]...)
			return m, err == nil, err
		}
	}
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	for {
		select {
		case m := <-g.msgs:
			if ok, err := match(m); ok {
				return m, err == nil, err
			}
			g.pending = append(g.pending, m)
		case <-t.C:
			return msg{}, false, nil
		case <-ctx.Done():
			return msg{}, false, context.Cause(ctx)
		}
	}
}
