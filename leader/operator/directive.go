package operator

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// ErrDirectiveExists is returned by PutDirective when a directive of the
// same Key is stored. It is another operator's, or an earlier send of this
// one that landed.
var ErrDirectiveExists = errors.New("operator: directive exists")

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
