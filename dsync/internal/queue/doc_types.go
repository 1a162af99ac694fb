// This file continues the package documentation of doc.go (go doc joins
// the package comments of a package's files in the order of their names):
// how the engine's code is divided, and what its locks guard.

// # Inside the engine
//
// The Engine claims, walks, grants and prunes (claim.go, claimrun.go,
// claimlost.go and start.go for one Claim call, claim.go also for a
// claim's end and the prune a release makes, claimtypes.go for a claim's
// types; walk.go for a walk, and walkread.go, walkfloor.go, full.go and
// walkhold.go for its steps, waiter.go for what a waiter asks of its
// claim; grant.go and tip.go for the grant rule and chained holds,
// planted.go for the rule as a planted error changes it). What else it knows lives in parts of its
// own, each the state of one concern, with its own lock; the exported
// methods of the parts are the Engine's:
//
//   - keys (keys.go): what this process knows of each key (its segment,
//     coverage and floor, its newest epoch and this process's release of
//     it, a gap, its own claims for pruning), the Claim calls and unended
//     claims that keep that knowledge, and whether the store's span was
//     lost.
//   - segments (segment.go, span.go, history.go, refresh.go, sweep.go):
//     the bucket span in force and the store's history as last read, and
//     every read and insert of gates and of the protocol document; what
//     it learns of a key it records in keys.
//   - sessions (session.go): the sessions opened here and their renewals
//     (and the Suspension of one, resume.go, which reads through the
//     store and the segments but keeps no state of theirs).
//   - judge (ended.go, read_expired.go): whether a claim below a walker
//     has ended (its marker, else its session, marked dead once expired),
//     with what reads taught of sessions (the expiries read, the runs of
//     reads that found one missing, those a reader found expired).
//   - holds (holds.go): what chained holds (tip.go) need of this
//     engine's own claims: those confirmed to hold at their insert, what
//     each weighted hold left live below it, which have ended, and when
//     chained holds of a key last read the markers of those left live.
//   - ends (end.go): the end queue, markers of unknown outcome sent again
//     until confirmed (Flush, and a Resender: resend.go), and the hook
//     told of the ends that land so.
//   - reader (run.go, floor.go, gap.go): the store, counting every read
//     when sent and when answered (a run confirms a claim only if no read
//     came after it), reading runs, and finding a key's newest claim, or
//     the highest under a gap, by ID.
//   - doneRecords (done.go) and queues (head.go): a Once's done records,
//     and the reads of a key's queue for those who look at it; neither
//     has state of its own.
//
// A walk (walk.go) goes down one epoch at a time (walkDown), calling its
// steps in order: the floor (walkfloor.go), the claim's read (walkread.go),
// the store's history it was sent in (walkfloor.go), its marker
// (walkread.go) and, for a live claim, whether the walker passes it
// (full.go, and whether those it passed leave it room: walkfloor.go);
// then the grant step (walkhold.go) checks room among the claims passed
// and confirms what the walk read. A step
// that finds that the claim must never hold returns that verdict (giveUp:
// verdict.go) without withdrawing the claim: Walk alone forgets what the
// verdict says and withdraws it.
//
// A planted error (SetBug) is shared by all the parts. The walk's files
// name none: where a planted error changes one of the walk's decisions,
// the walk calls a function named by what it decides, whose body (the
// protocol's rule, then the planted error) lives in planted_walk.go or
// planted_ends.go.
//
// Each part's lock is held only inside its methods, which never call
// another part, or the store, while holding it: no two of the parts'
// locks are ever held together, so they have no order. (sessions reads
// the clock under its lock, as the engine's one lock did.) Two locks
// outside the parts are taken before one of them, never after: a
// session's renewal slot (renewal.mu), held through its renewal, before
// sessions', and a Resender's before that of the end queue (Pending).
// Where the engine's one lock once guarded two of its maps together, the
// invariant holds as follows:
//
//	(I1) A reset (ErrReset) forgets every key and every claim confirmed
//	     to hold at its insert (a head): keys, then holds, each under its
//	     own lock. Every step reads or writes one of them at a time, so
//	     a step between the two clears counts as before the reset (on
//	     heads) or after it (on keys), but for a step on keys then one on
//	     heads by one goroutine, both between the clears, which keeps
//	     the knowledge learnt and drops the head confirmed after it. A
//	     dropped head only makes its claim's walk read the chain, which
//	     any walk may do: it never lets a claim hold on less.
//	(I2) Once the store records another span than this engine's
//	     (loseSpan), every key is forgotten, no gate is learnt again, and
//	     starts and joins return that error: the flag, the error and the
//	     clearing are set in one critical section of keys, and learnGate
//	     checks the flag under the same lock.
//	(I3) A read that finds a session's expiry ends the run of reads that
//	     found it missing (learnExpiry): both are the judge's, under its
//	     lock.
//	(I4) A key's knowledge is dropped to stay within Config.MaxKeys only
//	     while no Claim call or unended claim pins the key: both are
//	     keys', under its lock.
//	(I5) A chained hold's recheck (recheckLive) finds the claims left
//	     live that have not ended and records when it looked in one
//	     critical section: both are holds'.
//
// Every other step took the engine's lock for one map at a time, as its
// part's lock does now (ownReleaseStops read the floor before it took the
// lock for the ends it knew; End takes what a hold left live, records the
// end, and learns the release, each in a step of its own).
package queue
