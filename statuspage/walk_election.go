package statuspage

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// electionReads is how many times an election's leader and lease are
// read when they disagree (see Reader.election).
const electionReads = 3

// An ElectionState is an election as read.
type ElectionState struct {
	Name string
	// Leader is who leads (leader.Election.Leader); nil when nobody does.
	Leader *leader.Info
	// Lease is the leader's claim on operator.LockKey(Name), for its
	// expiry; nil when nobody leads, or when the term ended while it was
	// read.
	Lease *ClaimInfo
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
func (r *Reader) election(ctx context.Context, name string) (ElectionState, error) {
	e := ElectionState{Name: name}
	var opts []leader.Option
	if r.Members != nil {
		opts = append(opts, leader.WithMembers(r.Members))
	}
	watcher, err := leader.NewElection(r.client, name, opts...) // campaigns never
	if err != nil {
		return e, err
	}
	defer watcher.Close()
	for range electionReads {
		agree, err := r.readTerm(ctx, watcher, &e)
		if err != nil {
			return e, err
		}
		if agree {
			break
		}
	}
	if r.Members != nil {
		e.Members, err = r.Members.Members(ctx, name, r.Seen)
	}
	e.Now = r.Now()
	return e, err
}

// readTerm reads, once, who leads e's election (through watcher) and the
// lease of that term, into e (left as it was if a read fails). agree
// reports whether the two reads tell the same term: the queue's first
// claim that holds (expired claims before it hold no more) is the leader
// read, or there is none and nobody leads.
func (r *Reader) readTerm(ctx context.Context, watcher *leader.Election, e *ElectionState) (agree bool, err error) {
	info, err := watcher.Leader(ctx)
	nobody := errors.Is(err, leader.ErrNoLeader)
	if err != nil && !nobody {
		return false, err
	}
	q, err := r.Queue(ctx, operator.LockKey(e.Name))
	if err != nil {
		return false, err
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
	h := slices.IndexFunc(q, func(c ClaimInfo) bool { return c.Holds })
	return nobody && h < 0 || !nobody && h >= 0 && q[h].Token == info.Token, nil
}
