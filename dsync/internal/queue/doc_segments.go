// This file continues the package documentation of doc.go (go doc joins
// the package comments of a package's files in the order of their names):
// segments, and the proof that at most one is relied on at a time.

// # Segments
//
// A key's queue is a series of segments. A process that finds no live
// segment for a key starts one; a process relies on a segment (inserts into
// it, holds in it, takes the fast path) only while it is covered; and every
// fact above (F1–F3, floors, the walk, with the segment's first claim in the
// place of epoch 1) is about one segment. Two rules make segments safe: at
// most one segment is relied on at any time (L1), and a later segment's
// epochs lie above every earlier one's (L2).
//
// Time is cut in buckets of Span. A gate names the segment that owns its
// bucket; its ID is exclusive, so a bucket has one owner. A start reads
// the protocol document (inserting it if missing), then inserts, in one
// ordered request, the gates of every bucket from bucket(E)−1 to
// bucket(L)+1 (E and L the earliest and latest possible store times at
// sending), lowest first, recording the history read, then its first
// claim, of epoch base(E) = ⌊E/Quantum⌋ × Rate, and that claim's shadow.
// It succeeds only if every gate and the claim land (no other segment
// owned any of those buckets) and the protocol document, read again,
// names the starter's Span and the history its gates record. Otherwise
// the highest gate in the range that still gives coverage names the live
// segment, which the claim joins once the protocol document, read after
// it, names its Span and the gate's history.
//
// Coverage: a process that knows the gate of bucket b names segment S (it
// inserted it, or read it) relies on S while the latest possible store time
// is before the start of bucket b+2, less Margin. A holder inserts the gates
// of the buckets up to bucket(L)+1 as time goes on (Refresh, started at
// each renewal and running beside it, since it takes a request per key
// held when a bucket begins), and its lease is never extended past its
// keys' coverage as known when the renewal is sent (Lease.SetCap); a claim about to hold refreshes first, and one that holds
// with nothing below it in its segment reads its gate, and the protocol
// document after it (the store may have been emptied since the process
// learned it: L3). Only holders refresh: a
// process that holds nothing never extends a segment it may know only from
// a store since emptied. A claim whose segment is no longer covered, or
// that meets a claim of another segment above its segment's first epoch, is
// withdrawn, and the caller claims again (IsLapsed): the next claim starts
// or joins the live segment.
//
// (L1) Suppose P relies on S through the gate of bucket b at store time t,
// and a start of another segment S' succeeded. A segment's gates form a
// contiguous run of buckets from its start's lowest: a start's run is
// contiguous, and a refresh inserts only the buckets after the highest its
// process knows. Whichever of S's gate of b and the start of S' was applied
// second would have met the other had their runs shared a bucket, so the
// runs are apart. If the run of S' lies above b, bucket(E') − 1 > b, so E'
// is at or after the start of bucket b+2, later than t + Margin: S' was sent
// after P stopped relying on S. If it lies below S's run, S' is the earlier
// segment, and the same argument applies with the roles exchanged. Gates are
// deleted only when their bucket is long past (three buckets) or their key
// idle (Sweep), never while they can give coverage. The gates that a failed
// start left below the one it met (an ordered insert stops there) name a
// segment that never started; nobody can rely on them: the gate met belongs
// to a segment whose start came at least a bucket after their buckets, and
// they are read only after it.
//
// (L2) Every epoch E inserted into S was sent at a latest store time L with
// E < base(L + Margin) (Claim waits otherwise: at most Rate epochs per
// Quantum). A segment S' relied on after S was started at E' ≥ L + Margin
// (L1), so its first epoch base(E') ≥ base(L + Margin) > E, as Margin ≥
// Quantum. Tokens only grow from segment to segment, whatever the store
// forgot in between.
//
// (L3) Histories (history.go). An emptying at store time T begins a
// history H, whose protocol document is inserted after T (by whichever
// insert lands first, even one sent before T) with a fresh nonce N: the
// document is never updated, and an insert lands once at most, so N names
// H alone. A claim holds in H only in a segment relied on through a gate
// recording N: one it read, followed by a read of the document naming N
// (a join, or a claim that holds with nothing below it in its segment),
// or its own start's, or a refresh's, followed the same way (a refresh
// whose gates the document does not confirm forgets the segment:
// confirmRound). A process that knew a segment before T keeps what it
// knew, and may claim in a segment of that number in H with neither (a
// segment started in H in the same quantum of store time has it): its
// claim records the history it learnt the segment in (Doc.History), N'
// ≠ N, and holds only in N' (history.go). Its walk reads the claim right
// below it and whatever stops it, which a claim that held in H left and
// which records N: it reads the document, and gives its claim up; a walk
// that reaches the first epoch reads the gate and the document; the fast
// path needs this process's own claim below, in the store, and so of H.
// Every gate recording N was
// sent after its sender read N, so after T; by induction on time, the
// first gate recording N of each segment relied on in H is a start's, so
// the segment started after T (nothing is held at T, so no holder
// refreshes across it). Its base is then base(E') with E' ≥ T less the
// width of the sender's clock estimate, and every epoch inserted before T
// at a latest store time L lies below base(L + Margin): a hold in H gets a
// token above every token inserted more than Margin, two widths of the
// clock estimate and a Quantum before T (README: "more than two seconds,
// plus twice the error bound of the server-time estimate, before", with
// the default Margin and Quantum of a second each). A start or refresh held back across the emptying records the
// history before it: its segment is never relied on in H, but its gates
// own their buckets, so the key's next start waits until its range lies
// above them (up to three buckets after they were sent); the engine then
// reports the key busy without a request (noteStray).
//
// A hold needs coverage past its session's deadline: coverage reaches about
// two buckets ahead after a refresh, so a TTL must be at most Span (Claim
// refuses a longer one).
//
// Pruning (claim.go: prune) sheds the history of a segment in use: below the
// floor of its gate of bucket b, once the earliest possible store time is
// PruneDelay past the start of bucket b+1 (F2), a process that releases a
// claim deletes by ID the claims sent before that gate, their shadows and
// markers, lowest first, but the segment's first claim. A segment in use
// thus keeps about the epochs of its last two or three buckets. F3 says
// why no claim lands, and counts, in what a prune deleted; and a walk
// never reads below the floor of the gate that covers it, which is at
// least that of any gate a prune relied on (a waiter whose coverage ended
// reads the gates again, and gives its claim up if none covers it). A
// claim read as live may have lost its marker to a prune that ran after
// the floor was checked, but only if a claim lies between it and the
// walker (the one right below a live claim is not below any floor): a
// walk about to wait for a live claim below an ended or passed one reads
// the covering gate again, and a read of a key's queue reads it again at
// its end. A walk that passes such a claim goes on below it, as if it
// were live (which only costs room), and meets what the prune deleted:
// a missing claim, or a floor whose claim is missing, makes it read the
// covering gate again, and stop at its floor if that counts, before it
// takes the store for emptied. A walk that stopped at this process's own
// weighted release counts the claims that release's hold left live
// below it without walking below the release again. It stops there only
// while none of them lies below the floor this process knows (a prune
// may have deleted one there with its marker, and it would count live
// for good: the walk goes on down to the floor instead, ownReleaseStops);
// but one of them may end
// and lose its marker to a prune while the walker waits (a claim above it
// held with every lower claim ended, raising the floor), and a walker
// that then finds no marker, the claim's session alive, would count it
// live while its owner lives. So before a weighted walker reads the
// markers of the claims it passed, it drops those below the floor of
// the gate that covers it, if that floor counts (dropBelowFloor): a marker
// deleted after that floor was read went below a floor that the covering
// gate of the walker's next look is at least as high as, and that look
// drops the claim. Holds chained on this process's own weighted release
// count the same claims, and take those below a floor they know that
// counts for ended without reading their markers (tip.go: recheckLive):
// else one pruned with its marker would stay counted live for good, no
// chained hold would hold with every lower claim ended again, and the
// floor would stop rising, and pruning with it.
//
// Compaction (Sweep): a key with documents older than the idle age and no
// gate of a bucket from (now − idle age) on has not been relied on for at
// least the idle age less two buckets; its documents sent before (now −
// idle age) are deleted. A segment started after the sweep read the store
// sends its documents after that, and they stay; a start that lands late in
// old buckets gave its sender coverage that had ended by then (coverage is
// judged against the store's time when relied on, not when sent). The idle
// age must be at least four buckets. A compacted key leaves nothing in the
// store, and its next claim starts a segment above every token it had (L2).
package queue
