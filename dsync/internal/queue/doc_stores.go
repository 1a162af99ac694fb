// This file continues the package documentation of doc.go (go doc joins
// the package comments of a package's files in the order of their names):
// what the protocol assumes of the store, and of the writes that reach it.

// # A store emptied or restored
//
// The collections may be emptied (or dropped) under running processes
// while, as far as the store shows, no lock is held or awaited: every
// claim has ended, or its session has expired. Processes keep whatever
// they learned, and their requests in flight land whenever they land.
// Safety rests on holding only what the store confirms after the insert
// (above): knowledge from before is never enough. A release marker sent
// before may land after, but it cannot vouch for a claim the store lost:
// the fast path checks the claim's shadow, which is never sent twice. A
// gate sent before that lands after carries a floor whose claim the new
// history does not have: it does not count. No segment of the old history
// is relied on in the new one (L3: its gates record the old history; a
// process that knew it claims in it with a claim that records the old
// history too, which holds only in that one: its walk reads a claim of
// the new history right below it, or its segment's gate and the
// protocol document), so every segment relied on starts above the
// tokens handed out before the emptying, and its coverage is what the
// new history's gates give. A prune sent before deletes by ID: shadows and markers are
// named by nonces, never sent twice; claims below a floor of a segment of
// the old history, in which no claim counts in the new one. One limit: a
// lock held at the moment is not protected (its holder does not notice
// until its session is found gone).
//
// # Spans
//
// All of the above is about processes of one Span: buckets of two spans
// have different numbers for one time, so segments of two spans never meet
// at a gate. The protocol document, inserted once per history and never
// updated, decides it: a start reads it (inserting it if missing) before
// and after its segment's gates and first claim land, and relies on the
// segment only if it names its Span (and one history both times); a join
// reads it after the gate it joins (inserting it if missing); a sweep
// reads it first, and again before it drops gates, and drops only gates
// sent before that read (landing late, after an emptying, the drop spares
// the next history's); nothing else makes a
// process rely on a segment it did not (span.go). Two starts of different spans in one history read one
// document after their segments' documents landed: the start whose Span
// it does not name withdraws its claim. A segment relied on across an emptying
// has a claim held or awaited then, which the emptying's condition rules
// out; a claim made on knowledge from before the emptying holds only on
// what the store shows after its insert. A process whose Span the store
// does not record gets a *SpanError (ErrSpan) from Claim and Sweep.
//
// A session's documents may vanish at any time (its collection emptied),
// holds or not: the owner finds its session gone at its next renewal and
// retires it, and walkers wait a TTL before they take the session for dead
// (see above), also when a late insert brought part of it back without its
// first generation. This assumes they do not vanish twice within three TTLs
// (the longest TTL in use): a session that vanished, came back (its
// owner's renewal re-creates it when the reply of the renewal before was
// lost) and vanished again between two of a waiter's reads would look
// missing throughout (see noteAbsent for the bound).
//
// Restoring a backup brings back an older history, which may hold gates
// and claims a process's cached reads never saw: it requires the
// processes to be stopped (no caches, no requests in flight). Tokens then
// continue from the backup's.
//
// # Updates that are not atomic
//
// A store may apply an update as a read and a later write of the whole
// document, in separate transactions (FerretDB 1.24 does): two updates of
// one document applied at once can then lose the higher value, so "a $max
// only raises" holds only for updates that are never in flight together.
// Floors are therefore recorded in gates, which are inserted, never
// updated: a floor once recorded stays as long as its gate, and the floor
// of a segment's highest gate only rises. A session document
// is updated only by its owner, each renewal sent after the last one's
// reply, so two of its renewals are in flight together only if one
// failed: its outcome is unknown, it may be applied at any time, even
// after later renewals. After that the owner never updates that document
// again: the renewal, and those that follow, go to the session's next
// generation, a new document that an insert creates with the renewal's
// expiry and later renewals update. An insert lands once at most, so a
// generation whose insert is confirmed (or answered ErrExists) has no
// other write in flight. Readers take the highest expiry of a session's
// documents, which only rises while they exist: every document's own
// expiry only rises, and the backends delete a document only long after
// its expiry passed (an hour), by which time the session is dead if that
// expiry was its highest. Deletes are torn the same way (a read, then a
// delete by _id): a prune deletes only documents below a floor, where no
// claim that counts is ever inserted again (F3; see above).
//
// # Writes that land late
//
// A request can be applied long after its sender gave up on it, and after
// the sender's later requests. Each write is harmless whenever it lands:
//
//   - A claim insert of unknown outcome is withdrawn by its nonce (retried
//     until confirmed: by Flush, and in the background by a Resender), and
//     its owner forgets which epoch is the newest (a later insert must
//     again follow a known epoch, F1). Landing after the withdrawal, it is
//     ended on arrival. Landing in a hole below the floor, it is below
//     every walk's stopping point, and its owner never counts it (F3).
//     Landing after an emptying, it records the history before it: a
//     walker of the new history reads the protocol document once, and
//     passes it or waits for it as for any claim, until a withdrawal of
//     it lands after it or its session ends (its owner, had it learnt the
//     insert landed, would give it up at its walk: history.go). If only
//     the lock collection was emptied, the withdrawal may have landed
//     before it, in the old history, and its owner's session live on: the
//     stray then keeps the key waiting for as long as that session lives.
//     (It can never hold: a claim recording another history than the
//     store's does not. Treating it as ended would end that wait; not
//     done yet.)
//   - A session renewal only raises the expiry (of a document no other
//     renewal will update if this one's outcome is unknown: see above); an
//     insert of a new generation is as harmless, and landing after a drop
//     it brings back a session without its first generation, which counts
//     as missing once expired. Landing after the session
//     was judged dead, it revives nothing: the dead marker stays, and the
//     owner has retired the session. It can keep a claim without a marker
//     alive for up to one TTL after it was sent (liveness only).
//   - A marker states a fact that stays true: the owner held (release),
//     will never hold (withdraw), or stopped trusting the session (dead).
//   - A gate's floor states that everything below an epoch has ended,
//     and counts only while that epoch's claim exists.
//   - A prune deletes by ID only documents below a floor, where no claim
//     that counts is inserted again (F3), and never its segment's first
//     claim.
//   - A start's gates land in buckets of their sending time: landing late,
//     they meet a gate a covered segment relies on (and nothing after them
//     lands), or they are in buckets whose coverage is over, or, after an
//     emptying, they record the history before it and nobody relies on
//     them (L3). Twice: a start is sent once; a later start of the same
//     process, with a new claim, meets the earlier one's gates and joins
//     it (in one history). Landing after its own withdrawal, its claim is
//     ended on arrival.
//   - A gate refresh of unknown outcome gives its sender no coverage.
//     Landing late, its gate is of a bucket at most one past its sending
//     time: a start after it meets it and joins, one before it makes it
//     fail; after an emptying, it records the history before it (L3).
//     Twice (a driver sends a gate again on a transient failure): its ID
//     is taken, and the second is ErrExists.
//   - A compaction deletes only documents sent more than the idle age
//     before it, of keys no gate covered since; landing later, it deletes
//     only older documents still (a done record is judged when the
//     delete reaches it: its ID comes back once it expired, see done.go).
//     Old gates are dropped by bucket number, sent only if the protocol
//     document still names the history the sweep began in; a drop that
//     lands after an emptying deletes only gates long past in its span,
//     but those of a process of another span if one recorded its span
//     since (a limit of stores whose processes disagree on the span).
//   - The insert that opens a session, if its outcome is unknown, leaves
//     a session that is never used.
//   - A protocol document is only inserted: landing late in an emptied
//     store, it records its sender's Span first, and processes of another
//     Span are refused (an error to fix, not a second holder); it begins
//     a history under a nonce nobody knew, which every process reads
//     before it relies on a gate of it (L3). Twice: the same nonce, and
//     ErrExists.
//
// The simulation test in this package runs the protocol of several
// processes against one store with requests delayed, reordered, applied
// long after their senders gave up and torn (a run of a key's queue read
// a document at a time, others' requests landing between), with crashes,
// pauses, suspends, drifting clocks, failovers, pruning, the store emptied or
// restored, starts and refreshes held back until just after an emptying,
// and in a quarter of the runs a process configured with another bucket
// span, and checks every seed's history for conflicting holds valid at
// once, weights over the limit, token order between conflicting holds
// (across emptyings too, L3), late loss signals and renewal storms; planted protocol errors (in a
// build with -tags dsync_planted) must be caught.
package queue
