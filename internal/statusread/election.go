package statusread

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// electionReads is how many times an election's leader and lease are
// read when they disagree (see Reader.election).
const electionReads = 3

// An Election is an election as read.
type Election struct {
	Name string
	// Leader is who leads (leader.Election.Leader); nil when nobody does.
	Leader *leader.Info
	// Lease is the leader's claim on leader.LockKey(Name), for its
	// expiry; nil when nobody leads, or when the term ended while it was
	// read.
	Lease *dsync.ClaimInfo
	// Members are the candidates seen within Reader.Seen; none without
	// Reader.Members.
	Members []leader.Member
	Now     time.Time // Reader.Now when read
}

// election reads who leads election name, the lease of that term, and
// the members seen within r.Seen. The leader and the lease are two reads
// (Leader, then the lease key's Queue); a term that begins or ends
// between them makes them disagree, and they are read again, a few
// times. If they still disagree, the leader is as Leader told, with its
// lease if the queue still had it.
func (r *Reader) election(ctx context.Context, name string) (Election, error) {
	e := Election{Name: name}
	var opts []leader.Option
	if r.Members != nil {
		opts = append(opts, leader.WithMembers(r.Members))
	}
	watcher, err := leader.NewElection(r.Client, name, opts...) // campaigns never
	if err != nil {
		return e, err
	}
	defer watcher.Close()
	for range electionReads {
		info, err := watcher.Leader(ctx)
		nobody := errors.Is(err, leader.ErrNoLeader)
		if err != nil && !nobody {
			return e, err
		}
		q, err := r.Client.Queue(ctx, leader.LockKey(name))
		if err != nil {
			return e, err
		}
		e.Leader, e.Lease = nil, nil
		if !nobody {
			e.Leader = &info
			for i := range q {
				if q[i].Token == info.Token {
					e.Lease = &q[i]
				}
			}
		}
		// They agree when the queue's first claim that holds (expired
		// claims before it hold no more) is the leader read.
		h := slices.IndexFunc(q, func(c dsync.ClaimInfo) bool { return c.Holds })
		if nobody && h < 0 || !nobody && h >= 0 && q[h].Token == info.Token {
			break
		}
	}
	if r.Members != nil {
		e.Members, err = r.Members.Members(ctx, name, r.Seen)
	}
	e.Now = r.Now()
	return e, err
}
