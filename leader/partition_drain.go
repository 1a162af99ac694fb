package leader

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/leader/operator"
)

// Draining a Partition member (operator.Drain): a drained member counts with
// weight 0, so the assignment gives it no shard; the shards it owns move
// the way every shard moves (it releases one once the member the shard is
// assigned to waits for it), and none comes back while it stays drained.
// The assignment reads the drain directives, not the drained member's
// acknowledgement, so a drained member that is stuck or cut off is
// drained all the same. When every live member is drained no shard is
// assigned to anyone, and the members that own shards keep them: a drain
// never leaves a shard without an owner.

// membersAndDirectives is served by member stores that read the members
// and the directives of an election in one call (leadermongo's Store: one
// find), so that a Partition member reads drains at no cost.
type membersAndDirectives interface {
	MembersAndDirectives(ctx context.Context, election string, maxAge time.Duration) ([]Member, []operator.Directive, error)
}

// readStatus reads the live members' status and the members drained, once
// per heartbeat: by one call when the store offers it
// (membersAndDirectives), else Members and, when the store serves
// operator.Directives, Directives (drained is nil when it does not).
func (p *Partition) readStatus(ctx context.Context) (ms []Member, drained map[string]bool, err error) {
	if both, ok := p.members.(membersAndDirectives); ok {
		ms, all, err := both.MembersAndDirectives(ctx, p.name, p.liveFor())
		if err != nil {
			return nil, nil, err
		}
		return ms, operator.Drained(all), nil
	}
	if ms, err = p.members.Members(ctx, p.name, p.liveFor()); err != nil {
		return nil, nil, err
	}
	ds, ok := p.members.(operator.Directives)
	if !ok {
		return ms, nil, nil
	}
	all, err := ds.Directives(ctx, p.name)
	if err != nil {
		return nil, nil, err
	}
	return ms, operator.Drained(all), nil
}
