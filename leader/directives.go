package leader

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// Operator directives: records an operator (dsync drain, dsync transfer)
// inserts beside the members' status, never into a member's own status,
// which only its member writes. They are never updated, so a directive
// that lands late, or twice, cannot undo a later one (see Directive).
// Drains are never deleted. Transfer requests of a term that has ended
// may be deleted (TransferRequests.PruneTransferRequests): such a request
// is ignored anyway, so deleting it, or its landing again after the
// delete, changes nothing.

// ErrDirectiveExists is returned by PutDirective when a directive of the
// same Key is stored. It is another operator's, or an earlier send of this
// one that landed.
var ErrDirectiveExists = errors.New("leader: directive exists")

// A DirectiveKind says what a Directive asks for.
type DirectiveKind string

const (
	// DirectiveDrain drains (Drain true) or undrains a Partition member.
	DirectiveDrain DirectiveKind = "drain"
	// DirectiveTransfer asks the leader of term Term to hand over to
	// candidate Member. The leader hands over as by Election.Transfer.
	DirectiveTransfer DirectiveKind = "transfer"
)

// A Directive is an operator's record about an election or a Partition.
// A Partition's name is the election's. Directives are kept by a member
// store that serves Directives.
//
// A drain directive (DirectiveDrain) says that Partition member Member is
// drained (Drain true: no shard is assigned to it, so its shards move to
// the others and none comes back) or undrained. A member's state is that
// of its directive of the highest Gen: an undrain is a drain directive of
// a higher Gen, never a deletion, so a drain that lands late, after the
// undrain, changes nothing. Drain writes the next Gen.
//
// A transfer request (DirectiveTransfer) asks the leader of term Term
// (its fencing token) to hand its leadership to candidate Member. A term
// may have several, numbered 1, 2, ... (Gen; RequestTransfer inserts the
// next): the leader acts on the highest-numbered one it has not acted on
// yet, each once, so a request whose candidate died does not use up the
// term. Gen 0 is the key of a term's single request as a release before
// the numbering stored it ("#transfer/TERM"), read as any other. A
// request naming a term that has ended, however late it lands, is
// ignored.
type Directive struct {
	Kind   DirectiveKind
	Member string // drain: the member; transfer: the candidate to hand over to
	Gen    uint64 // drain: the generation; transfer: the request's number in its term; the highest one counts
	Drain  bool   // drain: drained (true) or undrained (false)
	Term   uint64 // transfer: the term whose leader is asked
	By     string // who asked (the CLI: user@host)
	Reason string // why, free text
	At     time.Time
}

// Key is d's identity within its election. No two directives of one Key are
// stored. It is "#drain/MEMBER/GEN", or "#transfer/TERM/N" (N the Gen; Gen
// 0: "#transfer/TERM", an older release's single request).
func (d Directive) Key() string {
	if d.Kind == DirectiveTransfer {
		if d.Gen == 0 {
			return "#transfer/" + strconv.FormatUint(d.Term, 10)
		}
		return "#transfer/" + strconv.FormatUint(d.Term, 10) + "/" + strconv.FormatUint(d.Gen, 10)
	}
	return "#drain/" + d.Member + "/" + strconv.FormatUint(d.Gen, 10)
}

// Directives is served by member stores that also keep operator directives.
// Those are MemberStores: leadermongo's Store and leadertest's. An Election
// or Partition whose member store serves it acts on them; one whose store
// does not never reads any.
type Directives interface {
	// PutDirective inserts d, stamped At with the store's current time,
	// under election; it returns ErrDirectiveExists (wrapped) if a
	// directive of d's Key is stored already. It never updates.
	PutDirective(ctx context.Context, election string, d Directive) error
	// Directives returns election's directives, in no set order.
	Directives(ctx context.Context, election string) ([]Directive, error)
}

// TransferRequests is served by member stores that read one term's
// transfer requests alone.
//
// Such stores also delete the requests of ended terms. leadermongo's
// Store reads them with one find on the range of their _ids; leadertest's
// serves it too. A leader whose member store serves Directives reads its
// term's requests at each heartbeat. It reads them by TransferRequests
// where the store serves it, else every directive of the election, by
// Directives. At the first heartbeat of each of its terms, it deletes the
// requests of the terms before it by PruneTransferRequests. It does so
// once: a failure is logged, and the next term's leader deletes them. A
// request of an earlier term than a leader's names a term that has ended,
// which is never acted on, so deleting it is safe. One that lands after
// the delete is ignored too, and deleted by a later term's leader.
type TransferRequests interface {
	// TransferRequests returns election's transfer requests of term, in
	// no set order.
	TransferRequests(ctx context.Context, election string, term uint64) ([]Directive, error)
	// PruneTransferRequests deletes election's transfer requests of the
	// terms before term. It deletes no other directive.
	PruneTransferRequests(ctx context.Context, election string, term uint64) error
}

// Drained returns the drained members among ds.
// Those are the members whose drain directive of the highest Gen drains
// them.
func Drained(ds []Directive) map[string]bool {
	latest := latestDrains(ds)
	out := map[string]bool{}
	for id, d := range latest {
		if d.Drain {
			out[id] = true
		}
	}
	return out
}

// latestDrains returns, by member, its drain directive of the highest Gen.
func latestDrains(ds []Directive) map[string]Directive {
	latest := map[string]Directive{}
	for _, d := range ds {
		if d.Kind != DirectiveDrain {
			continue
		}
		if cur, ok := latest[d.Member]; !ok || d.Gen > cur.Gen {
			latest[d.Member] = d
		}
	}
	return latest
}

// Drain drains member of partition (drain true) or undrains it.
//
// It inserts a drain directive of the Gen above the highest stored for
// that member. When another operator inserts that Gen first
// (ErrDirectiveExists), it reads again and inserts the next, until ctx
// ends. by and reason are recorded with it. It returns the directive
// inserted. A drain names one membership (Partition.ID): a process that
// restarts joins under a new ID, undrained.
func Drain(ctx context.Context, ds Directives, partition, member string, drain bool, by, reason string) (Directive, error) {
	if member == "" || partition == "" {
		return Directive{}, errors.New("leader: Drain needs a partition and a member")
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
// term is the leader's Info.Token. RequestTransfer inserts a transfer
// request numbered after the term's others. It tries 1, then, while the
// number is taken, the next, until ctx ends. A number is taken
// (ErrDirectiveExists) by a request of this term, or by this one sent
// before and landed. It returns the request inserted (its Term is the term
// asked).
//
// A leader whose member store serves Directives reads the requests of its
// term once per heartbeat while it leads. It acts with Transfer on the
// highest-numbered one it has not acted on yet, each once. A newer request
// ends a Transfer an older one started. A request whose term has ended is
// ignored.
//
// With term 0, RequestTransfer asks the term that leads now, which it
// reads from the election's lease through c, as Election.Leader does: an
// operator needs no Election, and the request names the term read just
// before it is sent. It returns an error wrapping ErrNoLeader when nobody
// leads. With a term given, c is not used and may be nil.
func RequestTransfer(ctx context.Context, c *dsync.Client, ds Directives, election string, term uint64, to, by, reason string) (Directive, error) {
	if election == "" || to == "" || ds == nil || term == 0 && c == nil {
		return Directive{}, errors.New("leader: RequestTransfer needs an election, a candidate, a member store that serves Directives, and a term or a Client to read it")
	}
	if term == 0 {
		info, err := leaderOf(ctx, c, nil, election)
		if err != nil {
			return Directive{}, err
		}
		term = info.Token
	}
	var n uint64
	return putNext(ctx, ds, election, func() (Directive, error) {
		n++
		return Directive{Kind: DirectiveTransfer, Member: to, Term: term, Gen: n, By: by, Reason: reason}, nil
	})
}

// latestTransferRequest returns the transfer request of term in ds of
// the highest number (Gen); ok is false when term has none.
func latestTransferRequest(ds []Directive, term uint64) (latest Directive, ok bool) {
	for _, d := range ds {
		if d.Kind == DirectiveTransfer && d.Term == term && (!ok || d.Gen > latest.Gen) {
			latest, ok = d, true
		}
	}
	return latest, ok
}
