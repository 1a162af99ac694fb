// Package chain is the queue protocol behind dsync's locks and elections:
// one lease per process (a session) that all its claims share, and a FIFO
// queue per key made of inserted documents only, so that it is safe on
// every MongoDB-compatible store. Backends provide a small Store (exclusive
// inserts, point reads, one newest-first read, a session update that only
// raises an expiry); the Engine runs the protocol over it.
//
// # The documents
//
//   - A session {id, expiresAt}: renewed by raising expiresAt ($max) to
//     the latest possible server time at sending plus the TTL. It is one
//     document, and one more (the next generation, inserted with the
//     expiry) each time a renewal's outcome is unknown; its expiry is the
//     highest of its documents'. Its owner
//     trusts it until its local deadline: the send time of the last
//     renewal confirmed before the deadline then in force, plus the TTL,
//     minus a margin. When a deadline passes, the session is retired for
//     good: every hold in it is lost and no claim of it is ever used again.
//   - A claim of key's epoch E, with ID key@E, naming its session and a
//     nonce unique to this insert. The store's unique ID lets one insert
//     of each epoch succeed. The epoch is the fencing token.
//   - An end marker with ID key@E~nonce: release (its owner held it),
//     withdraw (its owner gave it up before holding, or never learned
//     whether its insert was applied), or dead (another process proved its
//     session expired in server time). A marker ends only the claim with
//     its nonce, so withdrawing an insert of unknown outcome never ends a
//     later claim of the same epoch, even by the same session.
//   - key's floors {floor: P}, one inserted document per floor: every
//     epoch below P has ended. The key's floor is the highest not pruned.
//
// A claim has ended when its marker exists; its session's expiry alone
// does not end it until someone records the dead marker, because a late
// renewal can make an expired session look alive again.
//
// # Holding
//
// Claim inserts key@(N+1), where N is an epoch known to have existed.
// The claim holds once every lower epoch has ended. Walk checks that from
// the top down, reading each lower claim and its marker (and, if it has
// none, its session; a claim whose session expired before the read was
// sent gets a dead marker). It stops early at:
//
//   - a release: that claim held, so everything below it had ended then;
//   - a hole (a claim document that is gone): pruning deletes only below
//     the floor, which only covers ended epochs;
//   - an epoch below a floor this process read, or below what this process
//     knows to have ended (its own release, an earlier walk).
//
// Everything a walk learns is permanent: markers are never removed while
// their claim exists, floors only rise. So a claim waits only for the
// claims below it that are still live, and a handoff is the release marker
// plus the successor's read of it.
//
// # Why at most one claim holds
//
// Invariants:
//
//	(F1) Every claim insert of epoch M > 1 is sent only after M−1 was seen
//	     to exist (a newest-first read, a duplicate-key answer, a floor read,
//	     or this process's own confirmed claim). So whenever M exists, every
//	     epoch below M existed at some time before M did.
//	(F2) Only pruning deletes claims, and it deletes below the floor P only
//	     after raising the floor to P and waiting PruneDelay after that was
//	     confirmed. P is raised only by the holder of epoch P, at its
//	     release: every epoch below P had ended.
//	(F3) A claim counts (its owner ever walks it) only if it was proven to
//	     be above every existing epoch when inserted: epoch 1, or a floor
//	     read f <= E sent less than ViewTrust before the insert with the
//	     reply arriving within AcquireWindow, or a floor read f < E sent
//	     after the insert's reply.
//
// F3 holds because a counted insert of E succeeded, so E did not exist.
// If some M > E existed, E had existed before (F1) and had been deleted,
// by a prune below some P > E (F2). With the later floor read, that read
// follows the raise to P and shows f >= P > E. With the earlier read,
// sent at o: the raise to P was confirmed before the deletion minus
// PruneDelay, so before the insert minus PruneDelay, so before o, and the
// read shows f >= P. Both contradict f <= E. (The two delays are measured
// on two processes' monotonic clocks; PruneDelay exceeding twice their sum
// leaves room for any plausible drift.)
//
// Now suppose claims A < B both hold at time t. B held, so its walk found
// every epoch below B ended: A among them, by one of its markers, or below
// a release, a hole or a floor (each of which covers only ended epochs).
// A's end came before B held:
//
//   - release: A's owner releases only after it stopped holding.
//   - withdraw: A's owner never holds a claim it withdrew.
//   - dead: A's session had expired in server time when the walker's read
//     applied. A's owner's deadline is its last confirmed renewal's send
//     plus TTL minus the margin, and that renewal set the expiry to at least
//     the latest server time at sending plus TTL: the deadline came first,
//     and the owner retired the session then. A renewal confirmed after
//     that does not count: its reply came after the deadline in force.
//
// So A's owner did not hold A at t: two claims never hold at once. Nor can
// a lower claim hold after a higher one did: B's walk found A ended, and
// an ended claim never holds afterwards. Holds therefore go in epoch
// order, and epochs (tokens) strictly increase from hold to hold.
//
// # Updates that are not atomic
//
// A store may apply an update as a read and a later write of the whole
// document, in separate transactions (FerretDB 1.24 does): two updates of
// one document applied at once can then lose the higher value, so "a $max
// only raises" holds only for updates that are never in flight together.
// Floors are therefore inserted, one document per floor: a prune below P
// deletes only lower floors, and P's floor stays until a prune below a
// higher floor, so the highest floor ever confirmed is never lost and the
// floor a read returns only rises. A session document is updated only by
// its owner, each renewal sent after the last one's reply, so two of its
// renewals are in flight together only if one failed: its outcome is
// unknown, it may be applied at any time, even after later renewals. After
// that the owner never updates that document again: the renewal, and those
// that follow, go to the session's next generation, a new document that
// an insert creates with the renewal's expiry and later renewals update.
// An insert lands once at most, so a generation whose insert is confirmed
// (or answered ErrExists) has no other write in flight. Readers take the
// highest expiry of a session's documents, which only rises: every
// document's own expiry only rises, and the backends delete a document
// only long after its expiry passed (an hour), by which time the session
// is dead if that expiry was its highest.
//
// # Writes that land late
//
// A request can be applied long after its sender gave up on it, and after
// the sender's later requests. Each write is harmless whenever it lands:
//
//   - A claim insert of unknown outcome is withdrawn by its nonce (retried
//     by Flush until confirmed), and its owner forgets which epoch is the
//     newest (a later insert must again follow a known epoch, F1). Landing
//     after the withdrawal, it is ended on arrival. Landing in a hole below
//     the floor, it is below every walk's stopping point or skipped by the
//     floor check a blocked walk makes below an ended claim.
//   - A session renewal only raises the expiry (of a document no other
//     renewal will update if this one's outcome is unknown: see above);
//     an insert of a new generation is as harmless. Landing after the session
//     was judged dead, it revives nothing: the dead marker stays, and the
//     owner has retired the session. It can keep a claim without a marker
//     alive for up to one TTL after it was sent (liveness only).
//   - A marker states a fact that stays true: the owner held (release),
//     will never hold (withdraw), or stopped trusting the session (dead).
//   - A floor insert states that everything below an epoch that held has
//     ended; a prune deletes only below such a floor, even later.
//   - The insert that opens a session, if its outcome is unknown, leaves
//     a session that is never used.
//
// The simulation test in this package runs the protocol of several owners
// against one store with requests delayed, reordered, and applied long
// after their senders gave up, with crashes, pauses and pruning, and checks
// every seed's history for overlapping holds and token order; planted
// protocol errors must be caught.
package chain
