package queue

import (
	"context"
	"errors"
)

// What a Claim does when it finds no epoch to insert above, or loses the
// epoch it tried to another process: it reads where the key's queue ends.

// top returns the claim q's next insert should follow when the engine
// knows nothing better: the newest claim of q's segment, or, below a gap
// found earlier (gap.go), the highest claim under it.
func (q *claimRun) top(ctx context.Context) (Doc, bool, error) {
	e, key, seg := q.e, q.key, q.seg
	gap := e.keys.snapshot(key).gap
	if gap == 0 {
		return e.rd.newest(ctx, key, seg, e.keys.floorOf(key, seg))
	}
	d, found, err := e.rd.claimBelow(ctx, key, gap, seg)
	if err == nil {
		e.keys.clearGap(key, gap)
	}
	return d, found, err
}

// baseOnNewest makes the key's newest claim of q's segment the base, or
// none (the segment's first epoch is tried). again: the newest claim is
// of a later segment, so q's segment is over.
func (q *claimRun) baseOnNewest(ctx context.Context) (again bool, err error) {
	d, found, err := q.top(ctx)
	if err != nil {
		q.keepClimbed(d, found)
		if dropped, err := q.topFailed(ctx, err); !dropped {
			return false, err
		}
		// The floor's claim is gone, and its gate is gone or names another
		// segment: the store lost the key's history, and the segment is
		// over. This Claim enters again at once (starts, or joins the
		// store's segment now), as after a claim of a later segment,
		// rather than return busy to be queued again after a pause.
		return true, nil
	}
	q.base, q.known, q.tip = 0, true, tipRelease{}
	if found && d.Epoch >= q.seg && d.Seg != q.seg {
		// A claim of a later segment: this process's segment is over.
		q.e.keys.dropCover(q.key, q.seg)
		q.seg = 0
		return true, nil
	}
	if found && d.Epoch >= q.seg {
		q.base = d.Epoch
	}
	return false, nil
}

// keepClimbed keeps d, the highest claim of q's key that a climb cut
// short by an error had read (found: there is one), as the key's newest
// known epoch: it was seen to exist (F1), so the next Claim inserts above
// it rather than look for the end of the queue from the bottom again.
func (q *claimRun) keepClimbed(d Doc, found bool) {
	if found && d.Key == q.key && d.Seg == q.seg && d.Epoch >= q.seg {
		q.e.keys.learnNewest(q.key, d.Epoch)
	}
}

// readTop reads the key's newest claim for a try: busy unless it ended.
func (q *claimRun) readTop(ctx context.Context) error {
	d, found, err := q.top(ctx)
	if err != nil {
		_, err = q.topFailed(ctx, err)
		return err
	}
	return q.judgeTop(ctx, d, found)
}

// judgeTop judges d, the key's newest claim as a try read it (found:
// there is one): busy unless it ended (or passes by q's mode), and the
// try's next insert goes above it otherwise.
func (q *claimRun) judgeTop(ctx context.Context, d Doc, found bool) error {
	e := q.e
	q.base, q.known, q.topEnded = 0, true, false
	if found && d.Epoch >= q.seg && d.Seg != q.seg {
		return q.stale()
	}
	if found && d.Epoch >= q.seg {
		ended, _, _, blocker, err := e.judge.ended(ctx, d)
		if err != nil {
			return err
		}
		e.keys.learnNewest(q.key, d.Epoch)
		if !ended && !passes(q.terms, d) {
			return &BusyError{Key: q.key, Blocker: blocker}
		}
		q.base, q.topEnded = d.Epoch, ended
	}
	return nil
}

// epochTaken decides what follows an insert of epoch that met another
// process's claim there: a try's judgement of the claim it lost to, or
// the next round's base, found by point reads or by a run where the
// store reads runs.
func (q *claimRun) epochTaken(ctx context.Context, epoch uint64) (c *Claim, done bool, err error) {
	if q.try {
		return q.lostTry(ctx, epoch)
	}
	if q.e.rd.runReader() == nil {
		return q.lost(epoch)
	}
	return q.lostRun(ctx, epoch)
}

// lostTry is lost for a try: another claim took epoch first. A lost race
// is contention, not proof that the key is busy: the claim that won may
// have ended already (the try inserted above its own release, and another
// process has held and released the key since), and ErrHeld says the key
// is held or waited for. So the try reads the newest claim, from the one
// that took epoch up (it exists: F1), and goes on above it if it has
// ended (or passes by q's mode), busy otherwise. Each lost race is read
// again so, within the Claim's rounds and the try's context; the insert
// that follows holds only by its walk, as any try's does.
func (q *claimRun) lostTry(ctx context.Context, epoch uint64) (*Claim, bool, error) {
	e := q.e
	e.keys.learnNewest(q.key, epoch)
	q.tip, q.topRead = tipRelease{}, true
	if e.keys.snapshot(q.key).gap > 0 {
		// Below a gap the next claim starts under it: read from the
		// floor (top), not from the epoch lost above the gap.
		err := q.readTop(ctx)
		return nil, err != nil, err
	}
	d, found, err := e.store.Get(ctx, ClaimID(q.key, epoch))
	if err == nil && found {
		d, found, err = e.rd.climb(ctx, q.key, d)
	}
	if err == nil && !found {
		// Gone since it took the epoch (the store was emptied): read
		// where the queue ends now.
		err = q.readTop(ctx)
	} else if err == nil {
		err = q.judgeTop(ctx, d, found)
	}
	if err == nil && q.topEnded {
		// The race was lost to claims that ended before the read. Once
		// is the case a try is for (its insert chained on its own
		// release met another process's turn since); again means a
		// rival took the key during the try, and it would chase that
		// rival's turns, each won by an insert chained on its release,
		// until the try timeout cut it short.
		if q.chased++; q.chased > maxTryChases {
			err = &BusyError{Key: q.key}
		}
	}
	return nil, err != nil, err
}

// maxTryChases is how many races a try may lose to claims that ended
// before its read, and still insert again. Races lost to claims that
// are live but pass by the try's mode (readers beside readers) do not
// count: those claims hold beside it.
const maxTryChases = 1

// topFailed handles an error of top: a floor that does not count (a gate
// of a store's earlier history) leaves the segment to lapse, unless its
// gate is gone, in which case the segment is forgotten at once (dropped).
func (q *claimRun) topFailed(ctx context.Context, err error) (dropped bool, _ error) {
	if !errors.Is(err, errFloorStray) {
		return false, err
	}
	e := q.e
	ks := e.keys.snapshot(q.key)
	if ks.seg == q.seg {
		g, found, gerr := e.store.Get(ctx, GateID(q.key, ks.cover))
		if gerr != nil {
			return false, gerr
		}
		if !found || g.Kind != KindGate || g.Seg != q.seg {
			e.keys.dropCover(q.key, q.seg)
			dropped = true
		}
	}
	q.seg = 0
	return dropped, &BusyError{Key: q.key}
}

// stale drops q's segment, which a claim of a later one showed over: a
// try reports the key busy (its next attempt finds the live segment).
func (q *claimRun) stale() error {
	q.e.keys.dropCover(q.key, q.seg)
	q.seg = 0
	return &BusyError{Key: q.key}
}

// lost records that another process took epoch first: a Claim that is
// not a try (lostTry) tries the epoch above, or after maxDups epochs lost
// in a row looks for where the queue ends.
func (q *claimRun) lost(epoch uint64) (*Claim, bool, error) {
	q.e.keys.learnNewest(q.key, epoch)
	q.base, q.tip = epoch, tipRelease{}
	if q.dups++; q.dups >= maxDups && !q.newestRead {
		// Many waiters ahead: look for where the queue ends rather than
		// walk up it one insert at a time (once: by the time a second
		// look came back the end would have moved on). The look starts
		// at the epoch just lost, which exists, not at the key's floor:
		// a few reads, not two for every doubling of the epochs the
		// segment has above its floor.
		q.climbBase, q.dups, q.newestRead = true, 0, true
	}
	return nil, false, nil
}

// lostRun is lost for a store that reads runs: after another process took
// epoch first, one run above it shows how far the queue goes now, and the
// next insert follows the highest claim of q's segment in it (which
// exists: F1), instead of trying one epoch after another, one insert each.
func (q *claimRun) lostRun(ctx context.Context, epoch uint64) (*Claim, bool, error) {
	c, done, err := q.lost(epoch)
	if done || q.dups < 2 && !q.climbBase {
		return c, done, err
	}
	// The run below, not point reads (a climb, or a gallop from the
	// floor: top), finds where the queue ends.
	q.climbBase, q.known = false, true
	docs, rerr := q.e.rd.peekRun(ctx, q.key, epoch+1, epoch+2*runWindow)
	if rerr != nil {
		return nil, false, nil // the next insert tries epoch+1
	}
	top := epoch
	for _, d := range docs {
		if d.Key == q.key && d.Kind == KindClaim && d.Seg == q.seg && d.Epoch > top {
			top = d.Epoch
		}
	}
	if top > epoch {
		q.e.keys.learnNewest(q.key, top)
		q.base = top
	}
	return nil, false, nil
}
