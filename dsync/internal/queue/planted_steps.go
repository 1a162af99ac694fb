package queue

// The named calls by which the engine's steps ask whether a planted error
// changes them, one per planted error (see Bug for what each does). In
// every build without -tags dsync_planted each is the constant false
// (planted), so the compiler removes the call and the branch it guards.
// No file of the engine but planted*.go calls them: the others call the
// decisions of planted_walk.go, planted_ends.go, planted_claims.go and
// planted_segments.go, which do (.ci/house checks it).

// BugLostFirstIsDead judges a session found without its first
// generation by its expiry, as one found with it: after the sessions are
// dropped, a late insert of a later generation brings a session back with
// an old expiry, and a waiter takes it for dead while its owner holds on.
// (Numbered apart from the engine's own bugs and the grant rule's.)
const BugLostFirstIsDead Bug = 48

// absenceNeverStale reports whether BugAbsenceNeverStale is planted.
func (p *plant) absenceNeverStale() bool { return p.has(BugAbsenceNeverStale) }

// absenceToReply reports whether BugAbsenceToReply is planted.
func (p *plant) absenceToReply() bool { return p.has(BugAbsenceToReply) }

// absentIsDead reports whether BugAbsentIsDead is planted.
func (p *plant) absentIsDead() bool { return p.has(BugAbsentIsDead) }

// claimHistoryIgnored reports whether BugClaimHistoryIgnored is planted.
func (p *plant) claimHistoryIgnored() bool { return p.has(BugClaimHistoryIgnored) }

// compactResetsTokens reports whether BugCompactResetsTokens is planted.
func (p *plant) compactResetsTokens() bool { return p.has(BugCompactResetsTokens) }

// endBySession reports whether BugEndBySession is planted.
func (p *plant) endBySession() bool { return p.has(BugEndBySession) }

// floorClaimDropped reports whether BugFloorClaimDropped is planted.
func (p *plant) floorClaimDropped() bool { return p.has(BugFloorClaimDropped) }

// floorNotMonotone reports whether BugFloorNotMonotone is planted.
func (p *plant) floorNotMonotone() bool { return p.has(BugFloorNotMonotone) }

// fullDropsUnread reports whether BugFullDropsUnread is planted.
func (p *plant) fullDropsUnread() bool { return p.has(BugFullDropsUnread) }

// headsByKey reports whether BugHeadsByKey is planted.
func (p *plant) headsByKey() bool { return p.has(BugHeadsByKey) }

// historyIgnored reports whether BugHistoryIgnored is planted.
func (p *plant) historyIgnored() bool { return p.has(BugHistoryIgnored) }

// lostFirstIsDead reports whether BugLostFirstIsDead is planted.
func (p *plant) lostFirstIsDead() bool { return p.has(BugLostFirstIsDead) }

// noCoverage reports whether BugNoCoverage is planted.
func (p *plant) noCoverage() bool { return p.has(BugNoCoverage) }

// noFloorProof reports whether BugNoFloorProof is planted.
func (p *plant) noFloorProof() bool { return p.has(BugNoFloorProof) }

// onceStaleRead reports whether BugOnceStaleRead is planted.
func (p *plant) onceStaleRead() bool { return p.has(BugOnceStaleRead) }

// outageUncredited reports whether BugOutageUncredited is planted.
func (p *plant) outageUncredited() bool { return p.has(BugOutageUncredited) }

// ownReleaseStops reports whether BugOwnReleaseStops is planted.
func (p *plant) ownReleaseStops() bool { return p.has(BugOwnReleaseStops) }

// pruneEarly reports whether BugPruneEarly is planted.
func (p *plant) pruneEarly() bool { return p.has(BugPruneEarly) }

// readExpiredForgets reports whether BugReadExpiredForgets is planted.
func (p *plant) readExpiredForgets() bool { return p.has(BugReadExpiredForgets) }

// recheckMissingEnds reports whether BugRecheckMissingEnds is planted.
func (p *plant) recheckMissingEnds() bool { return p.has(BugRecheckMissingEnds) }

// renewSameGen reports whether BugRenewSameGen is planted.
func (p *plant) renewSameGen() bool { return p.has(BugRenewSameGen) }

// runOwnUnchecked reports whether BugRunOwnUnchecked is planted.
func (p *plant) runOwnUnchecked() bool { return p.has(BugRunOwnUnchecked) }

// spanIgnored reports whether BugSpanIgnored is planted.
func (p *plant) spanIgnored() bool { return p.has(BugSpanIgnored) }

// startSkipsPrevBucket reports whether BugStartSkipsPrevBucket is planted.
func (p *plant) startSkipsPrevBucket() bool { return p.has(BugStartSkipsPrevBucket) }

// tipAnyMode reports whether BugTipAnyMode is planted.
func (p *plant) tipAnyMode() bool { return p.has(BugTipAnyMode) }

// tipEndsAssumed reports whether BugTipEndsAssumed is planted.
func (p *plant) tipEndsAssumed() bool { return p.has(BugTipEndsAssumed) }

// tipWeightIgnored reports whether BugTipWeightIgnored is planted.
func (p *plant) tipWeightIgnored() bool { return p.has(BugTipWeightIgnored) }

// trustCache reports whether BugTrustCache is planted.
func (p *plant) trustCache() bool { return p.has(BugTrustCache) }

// withdrawAsRelease reports whether BugWithdrawAsRelease is planted.
func (p *plant) withdrawAsRelease() bool { return p.has(BugWithdrawAsRelease) }

// plantedLateConfirmExtends reports whether BugLateConfirmExtends is
// planted in the lease.
func (l *Lease) plantedLateConfirmExtends() bool { return l.has(BugLateConfirmExtends) }

// plantedLateConfirmKept reports whether BugLateConfirmKept is planted in
// the lease.
func (l *Lease) plantedLateConfirmKept() bool { return l.has(BugLateConfirmKept) }

// has reports whether b is planted in the lease.
func (l *Lease) has(b Bug) bool { return planted && l.bug == b }

// resumeUnchecked reports whether BugResumeUnchecked is planted.
func (p *plant) resumeUnchecked() bool { return p.has(BugResumeUnchecked) }
