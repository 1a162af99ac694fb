package dsyncgocron

import (
	"github.com/go-dsync/dsync/internal/plant"
)

// plantedIgnoresHold reports whether the Locker counts as won a slot
// whose claim failed with err (ctx ended, the store failed, or the record
// was not confirmed while its hold was valid): the bug
// plant.LockerIgnoresHold, planted for the negative control of the
// Locker's simulation (locker_sim_test.go, planted_test.go). In every
// build without -tags dsync_planted, plant.On is false and this is a
// constant false the compiler folds away.
//
// (Counting only the claims whose function ran but whose record was not
// confirmed, ErrUnconfirmed and ErrRanTwice, was caught in 1 of 200
// seeds: after such a claim the record mostly lands, or its replica's
// faults fail the other ticks of the slot too.)
func plantedIgnoresHold(err error) bool {
	return plant.On && plant.Is(plant.LockerIgnoresHold) && err != nil
}
