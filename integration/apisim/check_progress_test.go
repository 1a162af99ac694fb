package apisim

import (
	"testing"
	"time"
)

// progressHold is a Mutex hold of "k" from start, with a progress
// deadline of d ms (TTL 1 s) and reports at each of reports (the start's
// first); ended and lost are its Unlock and Lost() (0: never).
func progressHold(id, start, d int, reports []int, ended, lost int, stalled bool) *Hold {
	h := hold(id, PrimMutex, "k", uint64(id), start, ended, 9000)
	if ended == 0 {
		h.Ended = time.Time{}
	}
	if lost > 0 {
		h.LostAt = at(lost)
	}
	l := &ProgressLog{D: time.Duration(d) * time.Millisecond, TTL: time.Second, Stalled: stalled}
	for _, r := range append([]int{start}, reports...) {
		l.Reports = append(l.Reports, at(r))
	}
	h.Progress = l
	return h
}

func TestCheckProgress(t *testing.T) {
	pause := func(from, to int) ProcFault { return ProcFault{Proc: 1, Kind: "pause", From: at(from), To: at(to)} }
	wait := func(call, ret int) *Wait { return &Wait{Proc: 2, Key: "k", Call: at(call), Return: at(ret)} }
	runCases(t, CheckProgress, []checkCase{
		{"reports, then unlock", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200, 400, 600}, 800, 0, false)}}, 0},
		{"stalled on time", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200}, 0, 700, true)}}, 0},
		{"never stalled", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200}, 2000, 0, false)}}, 1},
		{"stalled late", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200}, 0, 750, true)}}, 1},
		{"stalled early", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200, 400}, 0, 600, true)}}, 1},
		{"gap past d, stalled at its end", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200, 800}, 0, 700, true)}}, 0},
		{"lost to its lease first", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200}, 0, 300, false)}}, 0},
		{"paused long: exempt", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200}, 0, 1200, true)},
			ProcFaults: []ProcFault{pause(300, 1200)}}, 0},
		{"paused briefly: due later by the pause", History{Holds: []*Hold{progressHold(1, 0, 500, []int{200}, 0, 800, true)},
			ProcFaults: []ProcFault{pause(300, 400)}}, 0},
		{"calm: handed on", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true),
			hold(2, PrimMutex, "k", 2, 800, 900, 9000)}, Waits: []*Wait{wait(50, 800)}}, 0},
		{"calm: waiter still waits", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}}, 1},
		{"not calm: not judged", History{Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}}, 0},
		// A lock set's member may hold the key from 700 on, its Hold
		// only beginning when its Set's Lock returns.
		{"calm: a lock set claimed the key", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}, Lives: []*ClaimLife{life("S", "k", 3, 80, 2500)}}, 0},
		{"calm: a lock set's claim ended before", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}, Lives: []*ClaimLife{life("S", "k", 3, 80, 600)}}, 1},
		// Gates that landed long before the stall still own their
		// buckets: the key may wait for them until KeyWaits.
		{"calm: the key waits for stalled gates", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}, ProcFaults: []ProcFault{stalledGatesFault("k", " landed", at(-5000), at(-4990), 2*time.Second)}}, 0},
		{"calm: stalled gates of another key", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}, ProcFaults: []ProcFault{stalledGatesFault("j", " landed", at(-5000), at(-4990), 2*time.Second)}}, 1},
		{"calm: stalled gates no longer in the way", History{Calm: true, Holds: []*Hold{progressHold(1, 100, 500, []int{200}, 0, 700, true)},
			Waits: []*Wait{wait(50, 3000)}, ProcFaults: []ProcFault{stalledGatesFault("k", " landed", at(-8000), at(-7990), 2*time.Second)}}, 1},
	})
}
