// This file continues the package documentation of doc.go (go doc joins
// the package comments of a package's files in the order of their names):
// how waiters judge claims across an outage of the store.

// # Outages
//
// An outage of the store stops every renewal, the holder's and its
// waiters' alike. Judged by its expiry alone, a claim's session expires
// during the outage, and the first waiter to reach the store after it
// takes the key, although its owner could no more renew than anyone. A
// claim that carries an outage grace (Config.OutageGrace: Grace > 0), on
// a store that keeps a record of up-time (driver.UptimeStore), is judged
// with that record instead:
//
//   - The record: every renewal of a session document stores the stamps
//     (the store's times of applying them) that document's renewals got
//     back, merged into spans under TTL/2, and gets its own stamp back
//     (session_uptime.go); a session's next generation starts a record
//     of its own from the last span, and the one before keeps its stamps. A stamp proves the store was up and applied a
//     write then; a gap in the union of every session's stamps shows a
//     time in which no renewal was applied: an outage of the store, or of
//     every process with a session.
//   - The rule (outage.go): with Ê the session's highest expiry known and
//     x = Ê − TTL, Dead holds when a chain of the record (no gap longer
//     than H = TTL/2) runs a TTL after x, or a stamp lies at or after
//     Ê + Grace.
//   - The waiter (judge_outage.go): a claim whose session expired before
//     the earliest possible server time at the judgement, as without a
//     grace, is marked dead only if Dead holds too, on evidence read
//     before the session: the store's record since x − H (O2). Otherwise
//     it is live, and its waiter looks again TTL/8 later (or at once after
//     a renewal of its own session: judgeSession). A reader (a Client's
//     Queue) reads the record before the sessions too (ReadEvidence), and
//     finds a claim expired, and remembers it so, only on the same
//     verdict (ReadExpired).
//   - The owner (resume.go): an owner whose engine has a grace may
//     suspend its session at its local deadline instead of retiring it
//     (Lease.Suspend): its holds are lost there, as without a grace, but
//     its claims stay unended, and none of them holds while it is
//     suspended. After a renewal sent at s_r is confirmed, its check
//     (Suspension.Check) reads the store's record since x_o − H, with
//     x_o = Ê_o − TTL and Ê_o the highest expiry confirmed by a reply
//     before the lease's deadline (Engine.Suspend), and adds
//     its own stamps; reads the session back (found with its first
//     generation) and each claim that held (its nonce, no end marker);
//     and resumes the lease (the same claims and tokens, its deadline
//     counted from s_r, Lease.Resume) only if those hold, no session
//     document unexpired since x_o − H lacks the record (driver.Uptime's
//     Unmarked: a dsync that keeps none judges by expiry alone), every
//     claim's key stays covered past the latest possible store time, Dead
//     does not hold with x_o and Ê_o, and the check ends before its new
//     deadline. On Dead, or a claim ended or gone, or the session dropped,
//     the owner retires the session and marks its claims dead
//     (MarkDead); on anything else it checks again after a later renewal,
//     or gives up (retires, and may mark them dead).
//
// Why it is safe. (O5) The waiter's rule only adds a condition to a dead
// verdict: every claim marked dead had its session expired by the
// earliest possible server time before the read, as before, and the
// argument of "Why at most one claim holds" stands unchanged for every
// hold its owner relied on before a deadline counted from a renewal in
// time. What is new is a hold relied on again after its deadline passed
// (a resume). It is safe because the owner's check agrees with every
// waiter's verdict:
//
//	(O1) The record only grows while the session's first generation
//	     exists: stamps are the store's times of writes it applied, a
//	     document's last write holds every stamp its earlier renewals
//	     returned (a renewal of unknown outcome ends that document's
//	     renewals), and cleaners delete only documents expired an hour,
//	     far past MaxGrace.
//	(O2) A waiter's evidence was committed before its session read ℓ1:
//	     it is the store's record, answered before ℓ1 is sent
//	     (driver.UptimeStore.ReadUptime reads only writes the store will
//	     not roll back), never this engine's stamps as it remembers them
//	     (an emptying of the sessions collection deletes them from the
//	     store while the engine remembers them; and the newest stamp
//	     merged into a session's spans is stored only once its next
//	     renewal lands). If ℓ1 landed before the owner's renewal s_r did
//	     (t_o), the owner's record read, sent after s_r's reply, holds all
//	     of it: ReadUptime reads every write applied before a renewal
//	     acknowledged before the read, and the record only grows while the
//	     owner's session's first generation exists (O1: an emptying after
//	     ℓ1 deletes that generation too, and the check finds the session
//	     dead).
//	(O3) A waiter that marked the claim dead judged with Ê_w ≥ Ê_o, so
//	     x_o ≤ x_w. Ê_o was confirmed by a reply before the lease's
//	     deadline D: every renewal the lease counted replied before the
//	     deadline then in force, which passed before any waiter could
//	     find past the expiry of the renewal that set it (the "dead" case
//	     of "Why at most one claim holds"); so each counted renewal landed
//	     before a waiter's ℓ1, its expiry was known to that waiter, and ℓ1
//	     came after D, after every reply before D, each after its
//	     renewal landed. Stored expiries only rise (and a claim's Exp,
//	     and what a waiter remembers, are expiries once stored). A
//	     renewal a resume counted is no exception: a waiter whose ℓ1
//	     landed before it did judged with the earlier Ê_o, and by O4 that
//	     check would have found dead.
//	(O4) Dead is monotone (outage.go): more evidence, a smaller x or a
//	     smaller Ê only make it truer. So if a waiter marked the claim
//	     dead with ℓ1 before t_o, Dead(Ev_w, x_w, Ê_w) held, hence
//	     Dead(Ev_o, x_o, Ê_o) on the owner's larger evidence (O2) with its
//	     smaller x and Ê (O3): the check finds dead, and does not resume.
//	     If ℓ1 came after t_o, the waiter read an expiry at least the one
//	     s_r stored, the latest possible store time at s_r plus the TTL,
//	     and found it past at ℓ1: the resumed deadline, s_r plus the TTL
//	     less the margin on the owner's clock, passed first, as for any
//	     renewal counted (and a renewal counted later moves it only as
//	     today's rule allows). A marker that lands late (its waiter
//	     paused) was decided at its ℓ1, so one of the two cases holds; one
//	     that landed before the owner's read-back is found there. No
//	     clock is compared across processes: the owner's verdict compares
//	     store stamps and expiries only, its own clock bounding only its
//	     own deadline, as today. (Hence no rule "dead once the store has
//	     been up a TTL until now": a store clock stepped back between a
//	     waiter's verdict and the owner's renewal would break it.)
//	(O6) A resumed hold relies on its segment as a renewed one does: the
//	     check asks every claim's key to stay covered past the latest
//	     possible store time, and the lease's cap (Lease.SetCap, set by its
//	     owner from the coverage) bounds the resumed deadline. An owner
//	     with a grace needs TTL + Grace well within its bucket span, or its
//	     segments lapse in an outage and it cannot resume. A coverage the
//	     engine forgot (a reset found on another key: I1) is learnt again
//	     as a join learns it, from the live gate of the claim's segment,
//	     of the store's history and the claim's (relearnCover).
//
// The owner's own dead markers (MarkDead), sent only once it retired the
// session, end claims it stopped relying on: harmless whenever they land
// (rule 11), as is a renewal of a suspended session that lands late (it
// raises an expiry the check does not count).
//
// What it costs. A holder cut off alone, while others renew, is taken
// over once the record shows a stamp at or after its expiry. A waiter
// whose engine can have its own session renewed at once (Engine.SetStamp:
// a dsync Client's Keeper) does so when it finds the session expired but
// not proven dead, and judges again after that renewal (judgeSession): a
// round trip after the expiry, where the renewals' schedule (every TTL/3
// by default) and the next look (TTL/8) would add up to both. The chain
// must also reach back to x: in a store whose sessions are all younger
// than a renewal interval, none has a stamp yet (a marked document has
// none until its first renewal), and the first takeover waits for one a
// TTL after it. After a store-wide
// outage longer than TTL/2, a claim whose owner does not renew again is
// taken over only after a TTL of store up-time after the outage, or at
// Ê + Grace: up to a TTL later than by expiry. A claim whose owner lost
// its hold at its deadline in the outage and does not suspend (an owner
// that keeps no record, or retires as without a grace) stays unended that
// long too. A suspended owner's check waits while any session document
// unexpired since x_o − H is unmarked: one of a process that keeps no
// record (a dsync without a grace, or older), whose waiters judge by
// expiry alone, which then loses the hold once its owner gives up. An
// engine with a grace inserts each session document (an open, a
// generation after a renewal of unknown outcome) marked, in the insert
// itself (driver.UptimeStore.InsertSessionUp): an insert it gave up that
// lands late, after an outage, and is never renewed holds up no check. A
// marked document carries no stamp until its first renewal. A reader remembers a claim it found
// expired for the grace longer (ReadExpired): a suspended owner renews
// its session, raising its expiry, until its check finds it dead. The record holds only the renewals of processes
// that keep it: a waiter whose own engine has no grace adds no stamps, so
// every process on a store should run with the same grace; on a store
// where no process that keeps the record renews, a claim with a grace is
// never judged dead.
package queue
