package dsyncmongo

import "time"

// The timing constants of the protocol. They exist because of pruning.
//
// A view of a key is what one command taught this process about the key's
// newest epoch E (or that it has none): whether E is released, provably
// expired or held. The command's local monotonic send time is when the
// view was learned. Acquire inserts epoch E+1 on the strength of a view
// that says E is released or expired, and it trusts the unique index to
// reject the insert if E+1 already exists. Pruning is what could defeat
// that: a stale view ("5 is newest, released") while others created 6 and
// 7 and a pruner deleted 5 and 6 would make an insert of 6 succeed with 7
// still held. Three rules prevent it:
//
//	(a) a view is used for an insert only if it was learned less than
//	    viewTrust before the insert is sent;
//	(b) an insert on a view counts only if its reply arrives less than
//	    acquireWindow after it was sent (otherwise Acquire returns
//	    ErrSlowReply, unless the proof after the insert below applies);
//	(c) a process that inserted epoch N deletes epochs below N (never N
//	    itself, so never the newest) only pruneDelay or more after the reply
//	    confirming N's insert arrived. It never deletes epoch 1.
//
// Why that suffices. Only pruning deletes, and it deletes below an epoch
// that exists, so the largest epoch present never decreases (F1). Every
// insert of M > 1, counted or not, follows a read or write that showed
// M−1 existing, so for M to exist, every epoch below M existed before M
// was inserted (F2). Suppose a counted
// insert of E+1, based on a view learned at o that said E was newest,
// succeeded at time x while some M > E+1 existed. By F2, E+1 existed
// before M did, so it had been deleted before x, by a prune below some
// N > E+1 that ran at p < x. By F1, N did not exist at o, so by (c)
// o < (insert of N) <= (its confirmation) <= p − pruneDelay < x − pruneDelay.
// By (a) and (b), x − o < viewTrust + acquireWindow: a contradiction, since
// pruneDelay > viewTrust + acquireWindow. So a counted insert always creates
// the newest epoch.
//
// Proof after the insert. A waiter that finds the epoch E it waits on
// released (by a read by _id: FerretDB answers any other query by decoding
// the whole collection) has no newest view. It inserts E+1 anyway, and the
// insert counts if a read by _id after it finds E present and released,
// for E >= 2. That shows E was the newest when the insert ran (at o1).
// Suppose some M > E existed at o1. Then E+1 existed before M (F2), and
// since our insert of E+1 succeeded, it had been deleted, by a prune below
// some N > E+1, which deletes every epoch in (1, N) present when it runs
// (on FerretDB: when it selects what to delete).
// A released E is not junk: only owners release, and only epochs that were
// the newest when they learned them (a counted insert, or their own epoch
// found by a newest-first read), never an insert that did not count. So
// the E found was inserted once, when it was the newest, before E+1
// existed; it was present when the prune ran and would have been deleted.
// Epoch 1 is never pruned, hence E >= 2; and the read of E must come after
// the insert, or a prune between the two would go unseen. Inserts that do
// not count are therefore never released by this package, only left to
// expire (the owner's next attempt releases its epoch if a newest-first
// read shows it is the newest).
//
// Epoch 1 needs no view at all. As it is never deleted, by F2 an insert of
// epoch 1 succeeds only if the key has never had an epoch; so Acquire tries
// it first for a key it knows nothing about, which spares a read for each
// new key and costs one duplicate-key error for a key with a history.
//
// Late writes. A command can reach the server and be applied long after
// its sender gave up on it, even after later commands of the same sender:
// TCP delivers held-back bytes once a stalled link recovers, and the
// driver abandons in-flight operations (closing their connections) when
// heartbeats time out, which does not unsend what was sent. Every write
// must therefore be harmless whenever it is applied. Five rules:
//
//	(L1) a stored expiry only grows: a renewal raises it with $max, a
//	     release leaves it alone, an insert sets it once. So an expiry
//	     this process read or wrote stays a lower bound of the stored one
//	     for as long as the epoch is unreleased.
//	(L2) nothing local learns from a reply that came too late. A view is
//	     dated by the send time of the command that taught it; a hold's
//	     deadline counts from the send time of a confirmation that arrived
//	     before the deadline in force (package dsync); an insert counts
//	     only under (a) and (b) or the proof after the insert.
//	(L3) a renewal's new expiry enters the view cache only if its reply
//	     arrived while the latest possible server time was still before
//	     the expiry the view knew. By (L1) the epoch then never lapsed
//	     before the renewal applied, so nobody can have taken it over
//	     meanwhile, and the view still describes the newest epoch.
//	(L4) a write whose outcome is unknown retires what it touched: a
//	     failed insert, renewal or release drops the view of its key, and
//	     the release of an epoch whose renewal failed reads the epoch back
//	     and releases it again if it reads unreleased (FerretDB applies an
//	     update by rewriting the whole document, so a renewal applied at
//	     the same moment as the release can write it back unreleased).
//	(L5) an insert applied late cannot count, since its sender never got
//	     the reply in time.
//
// What a late write can still do, and why it is harmless:
//
//   - A late renewal cannot shorten any hold (L1). It can revive an epoch
//     that lapsed and was taken over, because the store evaluates the
//     filter "expiresAt > earliest at sending" when it applies the update,
//     and not every MongoDB-compatible store can compare with its own
//     clock there. The revived epoch is below its successor, so
//     newest-first reads never see it; its owner does not count the reply
//     (it comes after the owner's deadline, which precedes the old expiry
//     by the margin), nor learns from it (L3); its owner's release of it
//     changes nothing for the newer holder. A waiter whose last view names
//     that epoch reads it by _id, sees it held, and waits at most until the
//     revived expiry, one TTL after the renewal was sent: liveness only.
//     If nobody had taken the epoch over yet, the revived epoch is still
//     the newest: its owner does not count on it (the reply came after
//     its deadline), and unless the owner's Unlock releases it, it blocks
//     the key until that expiry: liveness only as well.
//   - A late insert either fails on the unique index, or creates an epoch
//     nobody counts (L5): as the newest, it blocks the key until its
//     expiry (computed at sending, so soon) unless its owner's next
//     attempt finds and releases it; in a hole that pruning left, it is
//     junk that is never released (only counted epochs and epochs a
//     newest-first read showed are), so the proof after the insert never
//     mistakes it for a released predecessor. F2 holds in the form the
//     arguments above use: every epoch below M was inserted at least once
//     before M was.
//   - A late prune runs even longer after the confirmation of the epoch it
//     prunes below, so (c) holds a fortiori; it still never deletes that
//     epoch, so never the newest.
//   - A late release ends an epoch its owner had already stopped using.
//   - A late wake-up event is a hint: a "wait" carries its end in server
//     time, and a woken waiter proves its insert by reading.
//
// The durations are measured on the local monotonic clocks of two
// processes, so the inequality must hold with room for their drift (500 ppm
// by default; the factor of two below leaves far more). The clocks count
// time the machine spends suspended on Linux (package dsync, "Suspend");
// on systems where they do not, this assumes, like every lease duration in
// dsync, that a machine is not suspended between the send and the reply of
// one of its commands.
//
// The choice of values. viewTrust only has to cover the gap between
// learning a view and sending the insert, and the gap between an Unlock
// and the next Lock of a Mutex in a tight loop (which is what lets the
// steady state cost two commands per cycle). acquireWindow is far above a
// healthy round trip; a slower reply is an unknown outcome, which the
// caller retries, unless the epoch before is released (E >= 2) and the
// proof after the insert applies, which needs no timing. pruneDelay is
// twice their sum. It is also roughly how
// much history a key keeps: on FerretDB, whose queries other than
// {_id: value} scan the whole collection, that history is what most
// commands cost, so it is kept short.
const (
	viewTrust     = 1 * time.Second
	acquireWindow = 2 * time.Second
	pruneDelay    = 2 * (viewTrust + acquireWindow)

	// pruneEvery spaces prunes: a process notes every epoch it creates that
	// is a multiple of pruneEvery; on a later acquisition of the key, once
	// a noted epoch is pruneDelay old, it deletes below it. Each noted
	// epoch is used once, so that costs at most one delete per pruneEvery
	// acquisitions.
	pruneEvery = 16
)
