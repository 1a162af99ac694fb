package queue

import "context"

// Planted reports whether this build can plant protocol errors (SetBug):
// only one built with -tags dsync_planted, for the negative controls. In
// every other build the planted errors' branches compile away.
const Planted = planted

// SetBug plants a protocol error, for the negative controls; it panics in
// a build without them (Planted).
func (e *Engine) SetBug(b Bug) {
	if b != NoBug && !planted {
		panic("queue: planting a bug needs -tags dsync_planted")
	}
	e.plant.bug = b
}

// plant is the protocol error planted in an engine (SetBug), which its
// parts share: each checks, where it takes a step a planted error
// changes, whether that error is planted.
type plant struct{ bug Bug }

// has reports whether b is planted.
func (p *plant) has(b Bug) bool { return planted && p.bug == b }

// Bug plants a protocol error, for the simulation's negative controls.
type Bug int

const (
	NoBug Bug = iota
	// BugWithdrawAsRelease records withdrawals as releases: walkers stop
	// at a withdrawn claim as if everything below it had ended.
	BugWithdrawAsRelease
	// BugNoFloorProof inserts above whatever epoch it knows, below the
	// floor of the gate that covers the key too, and counts every
	// successful insert, even one that landed in a hole pruning left.
	BugNoFloorProof
	// BugEndBySession names end markers by epoch and session instead of
	// by the claim's nonce, so withdrawing an insert of unknown outcome can
	// end a later claim of the same epoch in the same session.
	BugEndBySession
	// BugRenewSameGen keeps renewing a session's document after a renewal
	// of it had an unknown outcome: on a store whose updates are not
	// atomic, that renewal can then be applied over a later one and lower
	// the expiry its owner trusts.
	BugRenewSameGen
	// BugTrustCache holds on what the engine learned earlier without the
	// store confirming it: a claim above the engine's own last release
	// holds at once, and a missing claim is taken for a pruned one without
	// a floor. A store emptied or restored then lets two claims hold.
	BugTrustCache
	// BugAbsentIsDead takes a session whose documents are all missing for
	// dead at once, as if every missing session had expired long ago.
	BugAbsentIsDead
	// BugAbsenceNeverStale keeps a run of reads that found a session
	// missing however long ago the last of them was: a session that came
	// back and vanished again between two reads of a run is taken for
	// dead while its owner still holds.
	BugAbsenceNeverStale
	// BugAbsenceToReply counts how long a session was found missing to
	// the reply of the last read, not its send: a read that landed before
	// the owner re-created its session and replied after can find it
	// missing for a TTL while the owner holds on.
	BugAbsenceToReply
	// BugPruneEarly prunes below the floor of a gate as soon as it knows
	// the gate, before the store's time is past its bucket: a process
	// still covered by the gate before, whose floor is lower, can insert
	// into the hole.
	BugPruneEarly
	// BugHeadsByKey remembers the claims confirmed to hold at their
	// insert by key instead of by nonce: another claim of the same key in
	// the same engine, still waiting, then takes the confirmation for its
	// own.
	BugHeadsByKey
	// BugSharedPassesAll lets a shared claim pass every live claim below
	// it, exclusive ones too.
	BugSharedPassesAll
	// BugAnyReleaseStops ends every walk at any release, as if every claim
	// were exclusive: a release of a shared or weighted claim does not say
	// that the claims below it had ended.
	BugAnyReleaseStops
	// BugWeightsNotSummed checks each live weighted claim below a weighted
	// claim against the limit alone, not their sum.
	BugWeightsNotSummed
	// BugLateConfirmKept (a Lease bug) ignores a renewal confirmed past
	// the deadline but keeps the lease: the next renewal is due in the
	// past, and so is every one after it, until the deadline timer runs.
	BugLateConfirmKept
	// BugLateConfirmExtends (a Lease bug) counts a renewal confirmed past
	// the deadline, extending a lease that another process may already
	// have taken over.
	BugLateConfirmExtends
	// BugCompactResetsTokens starts a new segment at a fixed low base (the
	// lowest epoch above it that has no claim), as if a key the sweeper
	// compacted had never been used: its tokens start again below those
	// of holds before the compaction.
	BugCompactResetsTokens
	// BugNoCoverage relies on a segment once known, whether or not a gate
	// still covers it: after a lapse, a new segment and the old one both
	// hold.
	BugNoCoverage
	// BugStartSkipsPrevBucket omits, from a start's gates, the bucket
	// before the earliest possible store time, so a start can miss the
	// gate a covered segment relies on.
	BugStartSkipsPrevBucket
	// BugFloorNotMonotone records in a gate only the floor this process
	// vouches for itself, not that of the gate before: a later gate can
	// then carry a lower floor than one a prune relied on.
	BugFloorNotMonotone
	// BugSpanIgnored relies on a segment whatever bucket span the store's
	// protocol document records: segments of two spans never meet at a
	// gate.
	BugSpanIgnored
	// BugRunOwnUnchecked takes a run of the key's queue for a
	// confirmation of the walker's own claim without looking for the
	// claim in it, and skips confirmOwn after any run: a store emptied
	// since the insert can then have handed the claim's epoch on.
	BugRunOwnUnchecked
	// BugTipAnyMode lets a claim chained on this process's own release
	// hold at once whatever the released claim's mode and its own: an
	// exclusive claim above a released read lock holds beside the readers
	// still live below it.
	BugTipAnyMode
	// BugTipWeightIgnored lets a weighted claim chained on this process's
	// own weighted release hold at once without counting the weight of
	// the live claims below that release.
	BugTipWeightIgnored
	// BugTipEndsAssumed lets a weighted claim chained on this process's
	// own weighted release hold with every lower claim ended (Below)
	// even while claims that release's walk passed live may still be:
	// its release is Clear, and ends other walks above live claims.
	BugTipEndsAssumed
	// BugOwnReleaseStops ends a walk at any weighted release this
	// process made, as at a Clear one, even while claims that release's
	// claim passed live may still be.
	BugOwnReleaseStops
	// BugRecheckMissingEnds lets recheckLive take a claim whose end
	// marker it did not find (or could not read) for ended: a chained
	// weighted hold above another process's live claim then holds Below,
	// and its Clear release ends walks above that live claim.
	BugRecheckMissingEnds
	// BugFullDropsUnread lets full, once the claims it has not read
	// again leave room, drop them instead of counting them live: they
	// are taken for ended unread.
	BugFullDropsUnread
	// BugFloorClaimDropped lets dropBelowFloor drop the floor's own
	// claim with those below it, though it may still hold: a waiter then
	// holds beside it.
	BugFloorClaimDropped
	// BugReadExpiredForgets has ReadExpired ignore remember: a reader
	// that found a claim's session expired reads the claim live again
	// once a renewal its owner sent in time lands late, after naming the
	// claim behind it as holding.
	BugReadExpiredForgets
	// BugOutageUncredited judges a claim with an outage grace by its
	// expiry alone, as a claim without one: a waiter takes the claim of
	// an owner that no more than it could reach the store in an outage,
	// as soon as the store is back.
	BugOutageUncredited
	// BugResumeUnchecked resumes a suspended lease without the evidence:
	// its resume check skips the outage rule, so an owner whose session
	// a waiter found dead (and took over) holds again beside it.
	BugResumeUnchecked
)

// The grant rule as the engine applies it: with a planted error, if one
// is planted (SetBug).

// passes is the grant rule's passes, or, with BugSharedPassesAll, a shared
// walker passing every live claim (and the sync family's planted errors,
// plantedPasses).
func (e *Engine) passes(ctx context.Context, w Terms, d Doc) bool {
	rule := passes(w, d) // (it reads nothing: a planted error replaces it)
	if e.has(BugSharedPassesAll) && w.Mode == Shared {
		return true
	}
	if p, ok := e.judge.plantedPasses(ctx, w, d); ok {
		return p
	}
	return rule
}

// fits is the grant rule's fits, or, with BugWeightsNotSummed, each
// weight checked against the limit alone (and the sync family's planted
// errors, plantedFits).
func (e *Engine) fits(w Terms, passed []passedClaim) bool {
	if f, ok := e.plant.plantedFits(w, passed); ok {
		return f
	}
	if e.has(BugWeightsNotSummed) {
		for _, p := range passed {
			if !fits(w, []passedClaim{p}) {
				return false
			}
		}
		return true
	}
	return fits(w, passed)
}

// stopsAt is the grant rule's stopsAt, or, with BugAnyReleaseStops, any
// release ending every walk.
func (e *Engine) stopsAt(w Terms, d, m Doc) bool {
	return e.has(BugAnyReleaseStops) || stopsAt(w, d, m)
}
