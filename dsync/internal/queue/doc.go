// Package queue is the queue protocol behind dsync's locks and elections:
// one lease per process (a session) that all its claims share, and a FIFO
// queue per key made of inserted documents only, so that it is safe on
// every MongoDB-compatible store. Drivers provide a small Store (package
// dsync/driver: exclusive inserts, ordered inserts, reads and deletes by
// ID, a session update that only raises an expiry, and the sweeper's
// reads and deletes, once in a while); the Engine runs the protocol over
// it, and a Lease holds a session's local deadline and renewal schedule.
// Every read and delete of the protocol's is by ID, so that its cost does
// not grow with the documents stored on a store (FerretDB) whose other
// queries decode them all, but the reads of runs of a key's queue, on a
// store that offers them (driver.Roles.Runs), which replace a read by ID
// per claim below a walker. Only package dsync uses it, through its
// Client.
//
// # The documents
//
//   - A session {id, expiresAt}: renewed by raising expiresAt ($max) to
//     the latest possible server time at sending plus the TTL, and never
//     to less than the last expiry sent plus the local time elapsed since
//     (a server clock stepped back cannot shorten it). It is one document,
//     and one more (the next generation, inserted with the expiry) each
//     time a renewal's outcome is unknown; its expiry is the highest of its
//     documents'. The first (generation 0) is confirmed before any claim
//     names the session. Its owner trusts it until its local deadline (Lease): the
//     send time of the last renewal confirmed before the deadline then in
//     force, plus the TTL, minus a margin of TTL/20. When a deadline passes,
//     or a renewal is confirmed only after it, or the session's documents
//     are found gone, the session is retired for good: every hold in it is
//     lost and no claim of it is ever used again. With an outage grace
//     (Config.OutageGrace), on a store that keeps a record of up-time, a
//     renewal also records the stamps its session's renewals got back
//     (session_uptime.go): the evidence waiters judge claims with a grace
//     by (see Outages below).
//   - A claim of key's epoch E, with ID key@E, naming its session, a nonce
//     unique to this insert, the session's TTL and the expiry its owner had
//     seen confirmed when it claimed, the engine's outage grace (zero: none;
//     see Outages below), its segment, and the history of the
//     store its owner learnt that segment in (see Histories below). The
//     store's unique ID lets one insert of each epoch succeed. The epoch
//     is the fencing token.
//   - The claim's shadow, key@E#nonce, inserted with the claim in one
//     ordered insert. A claim is inserted once and never sent again, so its
//     shadow exists only in a store that holds the claim.
//   - An end marker with ID key@E~nonce: release (its owner held it),
//     withdraw (its owner gave it up before holding, or never learned
//     whether its insert was applied), or dead (another process proved its
//     session expired in server time). A marker ends only the claim with
//     its nonce, so withdrawing an insert of unknown outcome never ends a
//     later claim of the same epoch, even by the same session.
//   - key's gates, one per bucket of store time (key#g/B: the store times in
//     [B×Span, (B+1)×Span)), each naming the segment that owns its bucket (see
//     Segments below), and the store's one protocol document, which records
//     Span: every process on a store must use the same (see Spans below).
//     Its nonce, fresh at each insert, names the store's history (since
//     the last emptying), and every gate records the history its sender
//     had read (see Histories below).
//   - key's floor {epoch F, nonce}, recorded in its gates: every epoch of
//     the gate's segment below F has ended. The nonce is that of F's claim,
//     and a floor counts only while that claim exists with it (floor.go).
//     A gate records a floor at least that of the gate of the bucket
//     before it (its inserter knows that gate), so a segment's floors rise
//     with its buckets; and a process records a floor only when a claim
//     of its own held with every lower claim ended, or a gate said so.
//
// Every document records the latest possible server time at its sending.
//
// A claim has ended when its marker exists; its session's expiry alone
// does not end it until someone records the dead marker, because a late
// renewal can make an expired session look alive again.
//
// # Holding
//
// A key's epochs come in segments (see Segments below): a claim belongs to
// one, named in it, and its segment's first claim has nothing below it.
// Claim inserts key@(N+1), where N is an epoch of its segment known to have
// existed. The
// claim holds by the grant rule (grant.go): an exclusive claim once every
// lower epoch has ended; a shared one once every lower claim that is not
// shared has; a weighted one once every lower claim that is not weighted
// has and the live lower weights plus its own fit its limit. It holds
// only on what the store shows after the insert:
//
//   - When this process released N itself, and N's hold proves that the
//     claim holds (tip.go): N held with every lower claim ended (its
//     release says so, Clear: an exclusive claim's always does), or N
//     and the claim are shared, or both are weighted with one limit and
//     the weights of the live claims N's walk passed that this process
//     has not ended since, plus the claim's own, fit it, the
//     insert carries N's shadow again, after its own documents: the
//     shadow's duplicate key proves N's claim still in the store, and N's
//     release stands (this process made it), so the claim holds with no
//     further read. An uncontended Lock+Unlock is two commands, and so is
//     an RLock+RUnlock or an Acquire+Release that follows this process's
//     own, however many readers or units are live below. A weighted claim
//     that holds so with none of those left (this process ended them all,
//     or found their end markers: it reads those of the claims still
//     counted live, by ID, in turn up to the first not found, at most
//     once a second per key while its holds chain; one below the floor
//     this process knows it takes for ended, unread, if that floor
//     counts, as a prune may have deleted its marker) holds with every
//     lower claim ended, as its walk would have found.
//   - Otherwise Walk checks, from the top down, reading each lower claim
//     and its marker (and, if it has none and the walker's mode does not
//     pass it, its session; a claim whose session expired gets a dead
//     marker). It passes ended claims, and live ones its mode allows
//     (counting their weights), and stops at a release that proves enough
//     (of a claim that held with every lower claim ended, or an exclusive
//     one, or, for a shared walker, a shared one, or a weighted one this
//     process released whose hold left live below it only claims this
//     process has ended since, or, for a weighted walker of its limit,
//     only claims that walker passes, none of them below the floor this
//     process knows, which it then counts as passed: tip.go; with one
//     below that floor, which a prune may have deleted with its marker,
//     the walk goes on down), below the key's floor
//     (if it counts), or at its segment's first epoch. A claim that holds
//     on reads then reads its own claim back: still there with its nonce,
//     the store was not emptied since the insert, so the reads saw the
//     history it belongs to.
//   - On a store that reads a stretch of a key's queue in one request
//     (driver.RunReader: in increasing order of epoch, each document read
//     no earlier than those before it), the walk reads the claims below
//     and their markers a run at a time, up to and including its own
//     claim (run.go): one request for any number of live claims below.
//     A run that ends with the walker's claim, with its nonce, proves
//     that claim stored after everything below it in the run was read,
//     as the read back would: if the engine read nothing since, the claim
//     holds without it. A run without it ends the claim (ErrReset).
//
// Passing a live claim needs no read of its session: a claim the walker's
// mode passes is passed whether it lives or not, and one that has ended
// only costs room (a weighted walker that finds no room reads the
// sessions of the claims it passed, full) or makes the walker's release
// not Clear. Both err on the side of waiting. A weighted walker that
// finds no room drops, unread, the claims it passed that lie below the
// floor of the gate that covers it, if that floor counts (walkfloor.go:
// dropBelowFloor): they have ended, as a walk's stop at that floor would
// say.
//
// A claim that finds a missing claim above the floor (or a floor that does
// not count), or its own claim gone, was made on knowledge the store no
// longer has (it
// was emptied or restored): it is withdrawn, the engine forgets what it
// knew of every key, and the caller gets ErrReset. Its next claim starts
// below the gap (gap.go): claims made above what the store still holds
// never hold, and the next ones fill the gap from below.
//
// # Why at most one claim holds
//
// Invariants, within one history of the store (between two resets):
//
//	(F1) Every claim insert of epoch M > 1 is sent only after M−1 was seen
//	     to exist (a point read, a duplicate-key answer, a floor that
//	     counts, or this process's own confirmed claim). So whenever M
//	     exists, every epoch below M existed at some time before M did.
//	(F2) Only pruning deletes claims, and it deletes only epochs below the
//	     floor F_b of a gate of some bucket b of their segment, only once
//	     the earliest possible store time is PruneDelay past the start of
//	     bucket b+1, and only claims sent before that gate was (claim.go: prune).
//	(F3) A claim of epoch E counts (its owner ever walks it) only if its
//	     owner relied at some time o on a gate of its segment (knew it, and
//	     was covered by it: see Segments) whose floor lies below E, with
//	     either o less than ViewTrust before the insert was sent and the
//	     reply within AcquireWindow after, or o after the reply; or E is
//	     its segment's first epoch and no floor was known.
//
// F3 makes every counted claim lie above every existing epoch when it was
// inserted. A counted insert of E succeeded, so E did not exist. If some
// M > E existed, E had existed before (F1) and had been deleted, by a
// prune below the floor F_b' > E of a gate of some bucket b' (F2), applied
// before the insert, so at a store time PruneDelay past the start of b'+1
// at least. The owner's coverage at o was judged with a latest possible
// store time L(o): in the earlier case, o came less than ViewTrust +
// AcquireWindow before the insert was applied, and PruneDelay exceeds that
// sum, so the store's time at o, and L(o), were past the start of b'+1; in
// the later case, o came after the deletion. A gate of bucket b covers a
// process only while L is before the start of b+2, so the owner's gate at
// o had b ≥ b', and the floors of a segment's gates rise with their
// buckets: F_b ≥ F_b' > E, against the owner's floor lying below E. (The
// delays are measured on two processes' monotonic clocks; PruneDelay
// exceeding twice their sum leaves room for any plausible drift.) The
// owner checks its coverage again before it holds, and a claim found
// below the floor of a gate that covers it (a hole) is withdrawn.
//
// Now suppose claims A < B both hold at time t. B held, so everything
// below it had ended: A among them, by one of its markers, or below a
// release, the key's floor (counting) or this process's own release
// (proven by its shadow), each of which covers only ended epochs. A's end
// came before B held:
//
//   - release: A's owner releases only after it stopped holding.
//   - withdraw: A's owner never holds a claim it withdrew.
//   - dead: A's session had expired in server time when the walker's read
//     applied, judged by the highest expiry the walker could know of: the
//     session's documents', and the expiry A carries. The read found the
//     session's first generation, so its documents were not dropped since
//     it was opened (see below for one found without it), and they hold
//     every renewal confirmed since: stored expiries only rise. A's owner's deadline
//     is its last confirmed renewal's send plus TTL minus the margin, and
//     that renewal set the expiry to at least the latest server time at
//     sending plus TTL: the deadline came first, and the owner retired the
//     session then (or suspended it, and can resume it only if no such
//     verdict can have been reached: doc_outage.go). A renewal confirmed
//     after that does not count: its reply came after the deadline in
//     force (Lease).
//   - dead, its session's documents missing: they stayed missing for the
//     claim's TTL, from the reply of the first read that found them so
//     to the send of the last (whose reply can come long after it
//     landed), by this process's clock and by the store's time both
//     (a clock that jumps ahead does not shorten it: noteAbsent). A's owner's renewals after they went found nothing, unless
//     one re-created them first (the insert of the next generation after
//     a renewal of unknown outcome, or an insert landing late), which
//     counts only before the owner's deadline in force. That deadline came
//     from a renewal sent before they went, before the first read
//     replied, so it passed within a TTL of that reply, before the last
//     read was sent: a re-creation landed before the last read did, which
//     would have found it. (Unless the documents vanished again in
//     between, unseen: they vanish at most once in three TTLs, and a run's
//     reads land less than two TTLs apart; see noteAbsent.) So A's
//     owner's last confirmed renewal was sent before the first read
//     replied, and its deadline passed before the last read was sent.
//   - dead, its session found without its first generation, every
//     document expired: counted as missing, as above (judgedByExpiry).
//     Only a drop (or a cleaner, once it expired) removes the first
//     generation, and an insert of a later one sent before a drop can
//     land after it, bringing the session back with that insert's old
//     expiry, while its owner holds on renewals confirmed since, whose
//     documents went with the drop. Such a document tells nothing of the
//     owner's deadline: a renewal confirmed after the drop raised a
//     document that a read landing after it finds unexpired until that
//     renewal's deadline, so an expired one is as good as missing.
//
// So A's owner did not hold A at t: two claims never hold at once. Nor can
// a lower claim hold after a higher one did: B's walk found A ended, and
// an ended claim never holds afterwards. Holds therefore go in epoch
// order, and epochs (tokens) strictly increase from hold to hold.
//
// With modes, the argument is the same for claims that conflict (grant.go:
// claims of different modes, weighted claims of different limits, or two
// exclusive ones). Let A < B conflict,
// and B hold at t. B's walk cannot pass A live (its mode does not allow
// it), so A ended, or lies below where the walk stopped: a counting floor
// or epoch 1 (only ended epochs lie below), or a release of a claim D
// (read, or known to B's process, which made it, for a claim chained on
// it) whose own hold proves A ended before it: D held with every lower claim
// ended (Clear), or D is exclusive (it held only once every lower claim
// had ended), or B and D are shared (D held once every lower non-shared
// claim, A among them, had ended), or B's process released D, a weighted
// claim, and has ended since every claim D's hold left live below it
// (when D held, every other claim below it had ended: D's walk stopped
// only where everything below had, and claims are never inserted below
// an existing epoch). B's process may also have released D, weighted
// with B's limit, while claims D's hold left live below it remain: they
// are then weighted with that limit (D passed them), so B passes each
// of them and does not conflict with any, and every other claim below D
// had ended; B counts them as passed, for the weights below. A claim B
// counts as passed leaves that count only on B's reads: its end marker,
// its session proven expired (a dead marker), or a floor that counts
// above it (every epoch below such a floor has ended, and a floor read
// stale is lower, never higher: it records what had ended when its gate
// was sent). For weighted claims: F1 puts every
// lower epoch in the store before a claim's insert, so when the highest H
// of several weighted holds valid at once last checked its weights, every
// other one was live below it, not below a stop (that would have ended
// it, but for a stop at a release of H's own process, below), and
// counted: their weights and H's fit H's limit, which is theirs (holds
// of another limit conflict with H). If H held on its insert, chained on
// this process's release of the claim D right below it, or its walk
// stopped at this process's release of a claim D of its limit, the other
// holds lay below D, live when D last checked its weights (a claim only
// ends), and so were among the claims D passed (or, for D chained in
// turn, those its own release left), and not among those this process
// had ended since (an ended claim never holds again): H counted each of
// them as passed, and dropped none (each was live when H last checked,
// so neither its marker nor a floor above it existed: a floor lies
// above ended epochs only). Their weights with H's own fit the limit.
// When no such claim is left, every claim below D had ended when H held,
// so H held with every lower claim ended, and its release is Clear.
package queue
