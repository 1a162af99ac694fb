package queue

import (
	"context"
	"time"
)

// Pruning deletes a key's history below its floor while the key is in
// use (compaction, sweep.go, deletes the whole of keys nobody uses). Only
// the epochs of a segment below the floor of its gate of some bucket b
// go, and only once the store's time is PruneDelay past the start of
// bucket b+1: a process that relies on the segment then knows a gate of
// bucket b or later (its coverage), whose floor is at least F_b, and
// inserts above it (see the package documentation). The segment's first
// claim stays.
//
// Documents go by ID: a claim, its shadow and its marker (both named by
// the claim's nonce, which this process knows for its own claims and
// reads for others'), a chunk of epochs at a time, lowest first, so that
// what is left of the history below the floor is a run of epochs up to
// it. Any process prunes when it releases a claim, so a key used by short
// processes (cron jobs) is pruned too. A prune is best effort: a failure
// only keeps history longer; what a prune misses (a claim inserted after
// the gate was sent, a marker of an insert that never landed) stays until
// the key is compacted.

const (
	// pruneChunk bounds the epochs one release prunes.
	pruneChunk = 64
	// maxMine bounds the own claims remembered per key for pruning.
	maxMine = 512
)

// mineRec is one of this process's claims, for pruning: its nonce and the
// latest possible store time at its sending.
type mineRec struct {
	nonce string
	sent  time.Time
}

// prune deletes the next chunk of key's history below the floor of the
// highest gate of segment seg that allows it now. Best effort.
func (e *Engine) prune(ctx context.Context, key string, seg uint64) {
	ks := e.keys.snapshot(key)
	if ks.seg != seg || seg == 0 || ks.floor.Epoch <= seg+1 {
		return // no floor known: the gates of lower buckets have none either
	}
	g, b, ok := e.pruneGate(ctx, key, seg, ks)
	if !ok {
		return
	}
	hi := g.Floor.Epoch
	lo, err := e.pruneStart(ctx, key, seg, hi)
	if err != nil {
		return
	}
	if lo >= hi {
		e.keys.notePruned(key, seg, b, hi)
		return
	}
	end := min(hi, lo+pruneChunk)
	ids, ok := e.pruneIDs(ctx, key, seg, g, lo, end)
	if !ok {
		return
	}
	if len(ids) > 0 {
		if err := e.store.Delete(ctx, ids); err != nil {
			return
		}
	}
	if end == hi {
		e.keys.notePruned(key, seg, b, hi)
	} else {
		e.keys.notePruned(key, seg, b-1, end)
	}
}

// pruneGate returns the gate, of bucket b, whose floor key's segment seg
// (known as ks) may be pruned below now; ok is false if there is none to
// prune below yet (a gate that gives no floor to prune below is recorded
// as pruned).
func (e *Engine) pruneGate(ctx context.Context, key string, seg uint64, ks keyState) (g Doc, b int64, ok bool) {
	// The highest bucket b with the store's time PruneDelay past the start
	// of b+1, among those this process knows a gate of.
	b = min(e.segments.bucket(e.clock.ServerNow().Earliest.Add(-e.cfg.PruneDelay))-1, ks.cover)
	if e.has(BugPruneEarly) {
		b = ks.cover
	}
	if b <= ks.pruned {
		return Doc{}, 0, false
	}
	g, found, err := e.store.Get(ctx, GateID(key, b))
	if err != nil {
		return Doc{}, 0, false
	}
	if !found || g.Kind != KindGate || g.Seg != seg || g.Floor.Epoch <= seg+1 {
		e.keys.notePruned(key, seg, b, 0)
		return Doc{}, 0, false
	}
	return g, b, true
}

// pruneIDs returns the IDs of the documents of epochs [lo, end) that a
// prune below gate g of segment seg deletes: each claim sent before g
// was, its shadow and its end marker (this process's own claims, copied
// under the lock, without a read). ok is false if a read failed.
func (e *Engine) pruneIDs(ctx context.Context, key string, seg uint64, g Doc, lo, end uint64) (ids []string, ok bool) {
	mine := e.keys.mineBetween(key, seg, lo, end)
	for epoch := lo; epoch < end; epoch++ {
		r, ok := mine[epoch]
		if !ok {
			d, found, err := e.store.Get(ctx, ClaimID(key, epoch))
			if err != nil {
				return nil, false
			}
			if !found || d.Kind != KindClaim {
				continue
			}
			r = mineRec{nonce: d.Nonce, sent: d.Sent}
		}
		if !r.sent.Before(g.Sent) {
			// Inserted after the gate was sent (landed late, or in a
			// history since emptied): not what its floor speaks of.
			continue
		}
		ids = append(ids, ShadowID(key, epoch, r.nonce), EndID(key, epoch, r.nonce), ClaimID(key, epoch))
	}
	return ids, true
}

// pruneStart returns the lowest epoch of segment seg below hi whose claim
// still exists (hi if none): what is left of the history below a floor
// is a run of epochs up to it, since prunes delete from the bottom up.
// It reads the claim below hi, then gallops down, then halves, starting
// from what this process pruned itself.
func (e *Engine) pruneStart(ctx context.Context, key string, seg, hi uint64) (uint64, error) {
	exists := func(epoch uint64) (bool, error) {
		d, found, err := e.store.Get(ctx, ClaimID(key, epoch))
		return found && d.Kind == KindClaim, err
	}
	present := hi - 1 // the lowest epoch known present
	if ok, err := exists(present); err != nil || !ok {
		return hi, err
	}
	low := seg // the highest epoch known gone (or the segment's first, never pruned)
	if p := e.keys.snapshot(key).prunedTo; p > low+1 && p < present {
		// Where this process's own prunes stopped: most often where the
		// run begins.
		ok, err := exists(p)
		if err != nil {
			return hi, err
		}
		if ok {
			below, err := exists(p - 1)
			if err != nil || !below {
				return p, err
			}
			present = p - 1
		} else {
			low = p
		}
	}
	return runStart(exists, low, present, hi)
}

// runStart returns the lowest epoch in (low, present] whose claim exists
// (by exists), where low's is gone (or is the segment's first) and
// present's exists: it gallops down from present, then halves. On an
// error it returns hi, as pruneStart does.
func runStart(exists func(uint64) (bool, error), low, present, hi uint64) (uint64, error) {
	for step := uint64(1); present-low > 1; step *= 2 {
		x := low + 1
		if present > low+step {
			x = present - step
		}
		ok, err := exists(x)
		if err != nil {
			return hi, err
		}
		if !ok {
			low = x
			break
		}
		present = x
	}
	for present-low > 1 {
		x := low + (present-low)/2
		ok, err := exists(x)
		if err != nil {
			return hi, err
		}
		if ok {
			present = x
		} else {
			low = x
		}
	}
	return present, nil
}
