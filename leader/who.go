package leader

import (
	"context"
	"fmt"
)

// Who leads is decided here, once, for every store: the holder of the
// election's lease is the claim at the head of LockKey(name)'s queue,
// which the Client reads; its member status, if a MemberStore keeps one,
// adds what it advertises (Version, Value).

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
		if len(q) == 0 {
			return Info{}, fmt.Errorf("%w in %q", ErrNoLeader, e.name)
		}
		l := q[0]
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
