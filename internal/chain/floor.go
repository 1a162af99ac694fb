package chain

import (
	"context"
	"errors"
	"time"
)

// A key's floor says that every epoch below it has ended. Floors are
// inserted, one document per floor, by the holder of the floor's epoch
// when it releases, and name that epoch's claim by its nonce.
//
// Two uses, with different needs:
//
//   - The proof that an insert landed above every existing epoch (F3)
//     reads the highest floor document, whatever it names: a floor that
//     does not count (below) can only make that floor higher, which makes
//     the proof stricter, never looser.
//   - Stopping a walk, or moving a claim up to the floor, relies on the
//     floor being true of the store's history as it is now. A floor
//     counts only while the claim it names exists with its nonce: a floor
//     raised before the store was emptied (an insert that lands late)
//     names a claim the new history does not have. The highest floor's
//     claim is never pruned (pruning deletes only below a floor, and the
//     floor's own document only below a higher one), so a floor that is
//     the highest and does not count can only be such a stray.

// freshFloor returns key's highest floor from a read sent less than
// ViewTrust ago, reading it if needed, with that read's send time.
func (e *Engine) freshFloor(ctx context.Context, key string, seg uint64) (Floor, time.Duration, error) {
	ks := e.snapshot(key)
	if ks.floorRead && ks.seg == seg && e.clock.Mono()-ks.floorSent < e.cfg.ViewTrust {
		return ks.floor, ks.floorSent, nil
	}
	return e.readFloor(ctx, key, seg)
}

// readFloor reads the highest floor document of key's segment seg.
func (e *Engine) readFloor(ctx context.Context, key string, seg uint64) (Floor, time.Duration, error) {
	sent := e.clock.Mono()
	f, _, err := e.store.Floor(ctx, key, seg, 0)
	if err != nil {
		return Floor{}, 0, err
	}
	e.mu.Lock()
	ks := e.state(key)
	if ks.seg == seg && (!ks.floorRead || sent > ks.floorSent) {
		ks.floor, ks.floorSent, ks.floorRead = f, sent, true
	}
	e.mu.Unlock()
	return f, sent, nil
}

// maxFloorReads bounds the floor documents countingFloor reads in one
// call: strays are rare (a floor insert that landed after the store was
// emptied), so a longer run means the reads are too slow to tell.
const maxFloorReads = 8

// errSlowFloor: countingFloor could not read a floor and its claim within
// the time that tells a stray floor from one pruned meanwhile.
var errSlowFloor = errors.New("chain: reading the key's floor took too long")

// countingFloor returns key's highest floor that counts (its claim exists
// with its nonce), read now; the zero Floor if none does. Floors that do
// not count are passed over.
//
// A floor's claim is pruned only by the holder of a higher floor, at
// least PruneDelay after raising it; a claim found missing within half
// that time of the floor read that returned it as the highest was not
// pruned: the floor is a stray.
func (e *Engine) countingFloor(ctx context.Context, key string, seg uint64) (Floor, error) {
	below := uint64(0)
	for range maxFloorReads {
		sent := e.clock.Mono()
		f, found, err := e.store.Floor(ctx, key, seg, below)
		if err != nil || !found {
			return Floor{}, err
		}
		if e.has(BugTrustCache) {
			return f, nil
		}
		d, found, err := e.store.Get(ctx, ClaimID(key, f.Epoch))
		if err != nil {
			return Floor{}, err
		}
		switch {
		case found && (d.Nonce == f.Nonce || f.Nonce == ""):
			// A floor without a nonce was raised by an older dsync: its
			// claim existing is all it can show.
			return f, nil
		case e.clock.Mono()-sent >= e.cfg.PruneDelay/2:
			below = 0 // too slow to tell: from the top again
		default:
			below = f.Epoch
		}
	}
	return Floor{}, errSlowFloor
}
