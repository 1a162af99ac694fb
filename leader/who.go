package leader

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-dsync/dsync/dsync"
)

// Who leads is decided here, once, for every store: the holder of the
// election's lease is the claim at the head of LockKey(name)'s queue (its
// first claim that holds), which the Client reads; its member status, if
// a MemberStore keeps one, adds what it advertises (Version, Value).

// readLeader returns who leads now, or an error wrapping ErrNoLeader.
// When the leader's member status is of a later term than the claim read
// (the term read has ended since), it reads who leads again, twice at
// most, rather than pair the ended term with what a later one advertises.
func (e *Election) readLeader(ctx context.Context) (Info, error) {
	for stale := 0; ; stale++ {
		q, err := e.client.Queue(ctx, LockKey(e.name))
		if err != nil {
			return Info{}, err
		}
		// The first claim that holds: claims before it whose lease
		// expired (ClaimInfo.Expired) lead no more, though nothing has
		// ended them yet (a read does not).
		i := slices.IndexFunc(q, func(c dsync.ClaimInfo) bool { return c.Holds })
		if i < 0 {
			return Info{}, fmt.Errorf("%w in %q", ErrNoLeader, e.name)
		}
		l := q[i]
		info := Info{ID: l.Owner, Host: l.Host, PID: l.PID, Since: l.QueuedAt, Token: l.Token}
		if e.cfg.members == nil {
			return info, nil
		}
		m, found, err := e.cfg.members.Member(ctx, e.name, l.Owner)
		if err != nil {
			return Info{}, fmt.Errorf("leader: read member status: %w", err)
		}
		if !found {
			return info, nil
		}
		info.Version = m.Version
		var current bool
		info.Value, info.Rev, current = MemberValue(info.Token, m)
		if current || stale >= 2 {
			return info, nil
		}
	}
}
