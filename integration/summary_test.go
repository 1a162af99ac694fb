package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-dsync/dsync/integration/hintrelay"
	"github.com/go-dsync/dsync/integration/history"
)

// summary accumulates what every checked history of the suite showed, for
// the line TestMain prints at the end.
var summary = &suiteSummary{faults: make(map[string]int)}

type suiteSummary struct {
	mu         sync.Mutex
	workers    int
	histories  int
	holds      int
	handoffs   int
	losses     int
	excused    int
	violations int
	stalls     int
	maxStall   time.Duration
	faults     map[string]int
	maxLate    time.Duration
	maxLateSet bool
	maxMargin  time.Duration
	// Negative controls: run, and detected by the checker.
	negatives, detected int
	// Write commands the proxies delivered after their sender gave up,
	// those of them the server applied, and the session renewals among
	// those.
	lateWrites, lateApplied, lateRenewals int
	// Direct hints: the processes that took them, what they counted, and
	// the faults the relays injected.
	hintProcs  int
	hintTurns  int // handoffs after a release in the clusters with hints
	hints      history.HintCounts
	hintFaults hintrelay.Counts
	// runs: runs of a queue read by the workers that read runs.
	runs uint64
}

// addRuns records the runs one cluster's workers read.
func (s *suiteSummary) addRuns(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs += n
}

// addHints records the hints of one cluster, whose workers handed over
// turns times after a release.
func (s *suiteSummary) addHints(procs, turns int, h history.HintCounts, faults hintrelay.Counts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hintProcs += procs
	s.hintTurns += turns
	s.hints.Sent += h.Sent
	s.hints.Received += h.Received
	s.hints.Rejected += h.Rejected
	s.hints.Refused += h.Refused
	s.hints.Taken += h.Taken
	s.hints.Woke += h.Woke
	s.hintFaults.Add(faults)
}

// used fails a run in which processes took hints and no hint woke a
// waiter in enough handoffs to expect one (a run of one short test, with
// a few handoffs, may see the store's feed first every time), or
// rejected no forged hint, or refused no replayed one, or no worker read
// a run of a queue: it would pass with hints or runs broken.
func (s *suiteSummary) used() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hintProcs > 0 && s.hintTurns >= minHandoffsForWakes && s.hints.Woke == 0 {
		return fmt.Errorf("integration: %d processes took hints and handed over %d times after a release, and no hint woke a waiter", s.hintProcs, s.hintTurns)
	}
	if f := s.hintFaults; f.Forged+f.Garbage >= 20 && s.hints.Rejected == 0 {
		return fmt.Errorf("integration: the relays sent %d forged hints and %d of garbage; the workers rejected none", f.Forged, f.Garbage)
	}
	if f := s.hintFaults; f.Replayed+f.Duplicated >= 20 && s.hints.Refused == 0 {
		return fmt.Errorf("integration: the relays sent %d replays and %d duplicates; the workers refused none", f.Replayed, f.Duplicated)
	}
	if s.workers > 0 && s.runs == 0 {
		return fmt.Errorf("integration: no worker read a run of a queue: the walks by runs met no fault")
	}
	return nil
}

// hintsLine is the summary's hints, and the faults done to them.
func (s *suiteSummary) hintsLine() string {
	h, f := s.hints, s.hintFaults
	return fmt.Sprintf("runs=%d hints{procs=%d sent=%d taken=%d woke=%d rejected=%d refused=%d} hint-faults{relayed=%d dropped=%d duplicated=%d delayed=%d (overtaken %d) forged=%d replayed=%d garbage=%d}",
		s.runs, s.hintProcs, h.Sent, h.Taken, h.Woke, h.Rejected, h.Refused,
		f.Received, f.Dropped, f.Duplicated, f.Delayed, f.Overtaken, f.Forged, f.Replayed, f.Garbage)
}

// addLateWrites records the late writes of one cluster's proxies.
func (s *suiteSummary) addLateWrites(late, applied, renewals int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lateWrites += late
	s.lateApplied += applied
	s.lateRenewals += renewals
}

func (s *suiteSummary) addWorker() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers++
}

// add records one checked history. violations counts the unexpected ones.
func (s *suiteSummary) add(r *history.Report, violations int, negative, detected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.histories++
	s.holds += r.NumHolds
	s.handoffs += r.Handoffs
	s.losses += r.Losses
	s.excused += r.Excused
	s.stalls += r.Stalls
	s.maxStall = max(s.maxStall, r.MaxStall)
	s.violations += violations
	for k, n := range r.Faults {
		s.faults[k] += n
	}
	if r.MaxLossHold != nil && (!s.maxLateSet || r.MaxLossLateness > s.maxLate) {
		s.maxLate, s.maxLateSet = r.MaxLossLateness, true
		s.maxMargin = time.Duration(r.MaxLossHold.Margin)
	}
	if negative {
		s.negatives++
		if detected {
			s.detected++
		}
	}
}

// negative records a negative control that is not a whole history.
func (s *suiteSummary) negative(detected bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.negatives++
	if detected {
		s.detected++
	}
}

func (s *suiteSummary) line() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var faults []string
	for _, k := range slices.Sorted(maps.Keys(s.faults)) {
		faults = append(faults, fmt.Sprintf("%s=%d", k, s.faults[k]))
	}
	late := "n/a"
	if s.maxLateSet {
		late = fmt.Sprintf("%v (margin %v)", s.maxLate.Round(10*time.Microsecond), s.maxMargin)
	}
	return fmt.Sprintf("integration summary: workers=%d histories=%d holds=%d handoffs=%d losses=%d (%d while paused or stalled) stalls=%d (max %v) faults{%s} late-applied-writes=%d (of %d late; %d renewals) %s violations=%d max-loss-signal-lateness=%s negative-controls=%d/%d detected",
		s.workers, s.histories, s.holds, s.handoffs, s.losses, s.excused, s.stalls, s.maxStall.Round(time.Millisecond), strings.Join(faults, " "),
		s.lateApplied, s.lateWrites, s.lateRenewals, s.hintsLine(), s.violations, late, s.detected, s.negatives)
}
