package apisim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Figures are what a run did.
type Figures struct {
	Seeds            int
	Ops              map[string]int // operations by primitive and outcome
	Holds            int
	Requests         int
	Faults           map[string]int // by kind
	Emptyings        int
	SessionEmptyings int
	Revokes          int // sessions the operator revoked (revoke.go)
	// EmptyingWaits: emptyings that waited for a read claim the store
	// showed held after the operations drained (opwait.go);
	// EmptyingWaitsStopped: those where one such claim's process was
	// paused or cut off as the wait began; EmptyingWaitsPastLinger: those
	// that waited past the longest linger (a sleep of which the operator
	// once took for enough); EmptyingsGivenUp: those given
	// up, a claim still held after the longest wait; EmptyingWaitMax: the
	// longest wait (fake time).
	EmptyingWaits, EmptyingWaitsStopped, EmptyingWaitsPastLinger, EmptyingsGivenUp int
	EmptyingWaitMax                                                                time.Duration
	// RevokedLosses: holds under way at their session's revoke and lost
	// after it; RevokedLostAfter: the longest from a revoke to such a
	// hold's Lost() (fake time; faults may delay the read of the record).
	RevokedLosses    int
	RevokedLostAfter time.Duration
	Restarts         int
	Pauses           int
	ClockSteps       int
	Disagreements    int // processes configured unlike the first
	Compacted        int // documents the sweeps of idle keys deleted
	Violations       int
	// What the checkers had to judge: holds lost (Lost() closed before
	// their holder gave them up), pairs of Locks whose order FIFO fixes,
	// Dos that ran f and returned nil.
	Losses, FIFOPairs, FIFOExempt, OnceWinners int
	// Observations: reports of who leads that the watchers got (watch.go).
	Observations int
	// Outages: store-wide outages (outage.go); Relocks: Locks and
	// Campaigns called again after a hold or term was lost in one, by
	// outcome (same token, ended).
	Outages, Relocks, Resumed int
	// Lock sets (Options.Sets): Locks and TryLocks that held, LockMores
	// that held, LockMores given up as the youngest of a deadlock,
	// records of deadlocks broken that landed (a Lock's too), cycles of
	// waits the claims showed (check_set_cycles.go), and those judged
	// against a bound (in calm runs, free of faults).
	SetsGranted, SetsGrown, SetDeadlocks, SetBreaks, SetCycles, SetCyclesJudged int
}

// Add adds o's figures to f's.
func (f *Figures) Add(o Figures) {
	if f.Ops == nil {
		f.Ops, f.Faults = make(map[string]int), make(map[string]int)
	}
	f.Seeds += o.Seeds
	for k, v := range o.Ops {
		f.Ops[k] += v
	}
	for k, v := range o.Faults {
		f.Faults[k] += v
	}
	f.Holds += o.Holds
	f.Requests += o.Requests
	f.Emptyings += o.Emptyings
	f.SessionEmptyings += o.SessionEmptyings
	f.Revokes += o.Revokes
	f.EmptyingWaits += o.EmptyingWaits
	f.EmptyingWaitsStopped += o.EmptyingWaitsStopped
	f.EmptyingWaitsPastLinger += o.EmptyingWaitsPastLinger
	f.EmptyingsGivenUp += o.EmptyingsGivenUp
	f.EmptyingWaitMax = max(f.EmptyingWaitMax, o.EmptyingWaitMax)
	f.RevokedLosses += o.RevokedLosses
	f.RevokedLostAfter = max(f.RevokedLostAfter, o.RevokedLostAfter)
	f.Restarts += o.Restarts
	f.Pauses += o.Pauses
	f.ClockSteps += o.ClockSteps
	f.Disagreements += o.Disagreements
	f.Compacted += o.Compacted
	f.Violations += o.Violations
	f.Losses += o.Losses
	f.FIFOPairs += o.FIFOPairs
	f.FIFOExempt += o.FIFOExempt
	f.OnceWinners += o.OnceWinners
	f.Observations += o.Observations
	f.Outages += o.Outages
	f.Relocks += o.Relocks
	f.Resumed += o.Resumed
	f.SetsGranted += o.SetsGranted
	f.SetsGrown += o.SetsGrown
	f.SetDeadlocks += o.SetDeadlocks
	f.SetBreaks += o.SetBreaks
	f.SetCycles += o.SetCycles
	f.SetCyclesJudged += o.SetCyclesJudged
}

// String is the summary line.
func (f Figures) String() string {
	kv := func(m map[string]int) string {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, " %s=%d", k, m[k])
		}
		return strings.TrimSpace(b.String())
	}
	line := fmt.Sprintf("apisim: %d seeds, %d holds (%d lost), %d requests; ops {%s}; faults {%s}; %d emptyings (%d waited for a held read claim, %d of them for a paused or cut-off process's, %d past the longest linger, at most %v; %d given up), %d sessions emptyings, %d revokes (%d holds lost after one, at most %v after), %d restarts, %d pauses, %d clock steps, %d config disagreements, %d documents compacted; judged %d FIFO pairs (%d exempt: a key cached across an emptying), %d Dos that ran f and returned nil, %d watchers' reports of who leads; %d violations",
		f.Seeds, f.Holds, f.Losses, f.Requests, kv(f.Ops), kv(f.Faults), f.Emptyings, f.EmptyingWaits, f.EmptyingWaitsStopped, f.EmptyingWaitsPastLinger, f.EmptyingWaitMax, f.EmptyingsGivenUp, f.SessionEmptyings, f.Revokes, f.RevokedLosses, f.RevokedLostAfter, f.Restarts, f.Pauses, f.ClockSteps, f.Disagreements, f.Compacted, f.FIFOPairs, f.FIFOExempt, f.OnceWinners, f.Observations, f.Violations)
	if f.Outages > 0 {
		line += fmt.Sprintf("; %d store outages, %d holds and terms taken back after one (%d held again)", f.Outages, f.Relocks, f.Resumed)
	}
	if f.SetsGranted > 0 {
		line += fmt.Sprintf("; lock sets: %d granted, %d grown by LockMore, %d LockMores given up as the youngest of a deadlock, %d deadlocks broken recorded, %d cycles of waits seen (%d judged against a bound)",
			f.SetsGranted, f.SetsGrown, f.SetDeadlocks, f.SetBreaks, f.SetCycles, f.SetCyclesJudged)
	}
	return line
}
