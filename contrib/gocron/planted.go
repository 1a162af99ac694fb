package dsyncgocron

import (
	"context"
	"sync/atomic"
)

// The Locker's planted bug, for the negative control of its simulation
// (locker_sim_test.go, planted_test.go). Only a build with -tags
// dsync_planted can plant it (plantable, planted_on.go); in every other
// build plantable is a constant false and the bug's branch compiles away.
// The switch is this module's own: a contrib module imports no internal
// package of the library.

// ignoresHold is set while the bug is planted: the Locker counts as won a
// slot whose claim failed (the slot's Once.Do did not get its hold before
// ctx ended or the store failed, or its record was not confirmed while
// the hold was valid), as if it held the slot, so a later tick of another
// replica finds no record and wins it too.
var ignoresHold atomic.Bool

// plantIgnoresHold plants the bug (on: true) or removes it, for every
// Locker of the process. It panics unless the build can plant.
func plantIgnoresHold(on bool) {
	if on && !plantable {
		panic("dsyncgocron: planting a bug needs -tags dsync_planted")
	}
	ignoresHold.Store(on)
}

// failedClaim decides what a claim of key's slot that failed with err
// gives (claim): the slot skipped (skipSlot). With the bug planted the
// Locker counts the slot as won.
//
// (Counting only the claims whose function ran but whose record was not
// confirmed, ErrUnconfirmed and ErrRanTwice, was caught in 1 of 200
// seeds: after such a claim the record mostly lands, or its replica's
// faults fail the other ticks of the slot too.)
func failedClaim(ctx context.Context, key string, err error) (bool, error) {
	if plantable && ignoresHold.Load() {
		return true, nil
	}
	return skipSlot(ctx, key, err)
}
