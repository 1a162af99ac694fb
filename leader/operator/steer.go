package operator

import (
	"context"
	"errors"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader/internal/lease"
)

// Namespace is the dsync namespace (dsync.WithNamespace) of the leadership
// leases. An election's lease is a lock in it, apart from every plain lock,
// whatever the two are named.
const Namespace = lease.Namespace

// LockKey is the key, as stored, whose holder leads election.
// It is election in the namespace Namespace ("dsync:election/NAME",
// statuspage.NamespacedKey). No plain lock has it.
func LockKey(election string) string { return lease.Key(election) }

// Drain drains member of partition (drain true) or undrains it.
//
// It inserts a drain directive of the Gen above the highest stored for
// that member. When another operator inserts that Gen first
// (ErrDirectiveExists), it reads again and inserts the next, until ctx
// ends. by and reason are recorded with it. It returns the directive
// inserted. A drain names one membership (leader's Partition.ID): a
// process that restarts joins under a new ID, undrained.
func Drain(ctx context.Context, ds Directives, partition, member string, drain bool, by, reason string) (Directive, error) {
	if member == "" || partition == "" {
		return Directive{}, errors.New("operator: Drain needs a partition and a member")
	}
	var tried uint64 // the Gen refused last: the next try goes above it, whatever a read shows
	return putNext(ctx, ds, partition, func() (Directive, error) {
		all, err := ds.Directives(ctx, partition)
		if err != nil {
			return Directive{}, err
		}
		tried = max(latestDrains(all)[member].Gen, tried) + 1
		return Directive{Kind: DirectiveDrain, Member: member, Gen: tried, Drain: drain, By: by, Reason: reason}, nil
	})
}

// putNext inserts the directive next returns, and again the next one
// while the one inserted is stored already (ErrDirectiveExists), until
// ctx ends; it returns the directive inserted.
func putNext(ctx context.Context, ds Directives, name string, next func() (Directive, error)) (Directive, error) {
	for {
		d, err := next()
		if err != nil {
			return Directive{}, err
		}
		err = ds.PutDirective(ctx, name, d)
		switch {
		case err == nil:
			return d, nil
		case !errors.Is(err, ErrDirectiveExists):
			return Directive{}, err
		case ctx.Err() != nil:
			return Directive{}, context.Cause(ctx)
		}
	}
}

// RequestTransfer asks the leader of election's term term to hand over to
// candidate to.
//
// term is the leader's leader.Info.Token. RequestTransfer inserts a
// transfer request numbered after the term's others. It tries 1, then,
// while the number is taken, the next, until ctx ends. A number is taken
// (ErrDirectiveExists) by a request of this term, or by this one sent
// before and landed. It returns the request inserted (its Term is the
// term asked).
//
// A leader whose member store serves Directives reads the requests of its
// term once per heartbeat while it leads. It acts with
// leader.Election.Transfer on the highest-numbered one it has not acted
// on yet, each once. A newer request ends a Transfer an older one
// started. A request whose term has ended is ignored.
//
// With term 0, RequestTransfer asks the term that leads now, which it
// reads from the election's lease through c, as leader.Election.Leader
// does: an operator needs no Election, and the request names the term
// read just before it is sent. It returns an error wrapping leader.ErrNoLeader when
// nobody leads. With a term given, c is not used and may be nil.
func RequestTransfer(ctx context.Context, c *dsync.Client, ds Directives, election string, term uint64, to, by, reason string) (Directive, error) {
	if election == "" || to == "" || ds == nil || term == 0 && c == nil {
		return Directive{}, errors.New("operator: RequestTransfer needs an election, a candidate, a member store that serves Directives, and a term or a Client to read it")
	}
	if term == 0 {
		holder, err := lease.Holder(ctx, c, election)
		if err != nil {
			return Directive{}, err
		}
		term = holder.Token
	}
	var n uint64
	return putNext(ctx, ds, election, func() (Directive, error) {
		n++
		return Directive{Kind: DirectiveTransfer, Member: to, Term: term, Gen: n, By: by, Reason: reason}, nil
	})
}
