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
//     (the store's times of applying them) its session's renewals got
//     back, merged into spans under TTL/2, and gets its own stamp back
//     (session_uptime.go). A stamp proves the store was up and applied a
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
//     before the session: this engine's own sessions' stamps, and, unless
//     they decide, the store's record since x − H. Otherwise it is live,
//     and its waiter looks again TTL/8 later. A reader (a Client's
//     Queue) reads the record before the sessions too (ReadEvidence), and
//     finds a claim expired, and remembers it so, only on the same
//     verdict (ReadExpired).
//
// Why it is safe. (O5) The rule only adds a condition to a dead verdict:
// every claim marked dead had its session expired by the earliest
// possible server time before the read, as before, and the argument of
// "Why at most one claim holds" stands unchanged. The owner of a claim
// with a grace still retires its session at its local deadline; nothing
// lets it resume after an outage yet, so a claim with a grace that is not
// marked dead is only held back, never held by two.
//
// The verdict is built so that an owner can later check it for itself
// and agree (what resuming after an outage will rest on):
//
//	(O1) The record only grows while the session's first generation
//	     exists: stamps are the store's times of writes it applied, a
//	     document's last write holds every stamp its earlier renewals
//	     returned (a renewal of unknown outcome ends that document's
//	     renewals), and cleaners delete only documents expired an hour,
//	     far past MaxGrace.
//	(O2) A waiter's evidence was committed before its session read: its
//	     own stamps came back in replies before it was sent, and the
//	     store's record is answered before it is sent
//	     (driver.UptimeStore.ReadUptime reads only writes the store will
//	     not roll back).
//	(O3) An expiry an owner saw confirmed was stored before its reply,
//	     and stored expiries only rise (a claim's Exp is one its owner saw
//	     confirmed): a waiter whose session read landed after that
//	     confirmation judges with an Ê at least the owner's, its x no
//	     earlier than the owner's.
//	(O4) Dead is monotone (outage.go): more evidence, a smaller x or a
//	     smaller Ê only make it truer. So a waiter's dead verdict is the
//	     verdict of any check made later on evidence read after the
//	     waiter's session read, with an expiry and x no greater than the
//	     waiter's.
//
// What it costs. A holder cut off alone, while others renew, is taken
// over once the record shows a stamp at or after its expiry: at the next
// renewal of some process after the expiry (every TTL/3 by default) and
// the waiter's next look, not at the expiry itself. After a store-wide
// outage longer than TTL/2, a claim whose owner does not renew again is
// taken over only after a TTL of store up-time after the outage, or at
// Ê + Grace: up to a TTL later than by expiry. A claim whose owner lost
// its hold at its deadline in the outage (owners do not resume yet) stays
// unended that long too. The record holds only the renewals of processes
// that keep it: a waiter whose own engine has no grace adds no stamps, so
// every process on a store should run with the same grace; on a store
// where no process that keeps the record renews, a claim with a grace is
// never judged dead.
package queue
