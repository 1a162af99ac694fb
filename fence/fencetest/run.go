package fencetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-dsync/dsync/fence"
)

// Run runs the suite against r, failing t if it finds anything wrong. It
// fails t on a stale write, a history that is not linearizable or a trial
// it cannot judge. It logs the report, whose seed repeats the run
// (Options.Seed).
func Run(t testing.TB, r Resource, o Options) {
	t.Helper()
	rep, err := Check(t.Context(), r, o)
	if err != nil {
		t.Fatalf("fencetest: %v (%s)", err, rep)
	}
	t.Logf("fencetest: %s", rep)
	if err := rep.Err(); err != nil {
		t.Error(err)
	}
}

// Check runs the suite against r and returns what it found. Its error is
// ctx's, if ctx ended first. A test that plants an adapter that skips its
// fence calls Check and expects the report's StaleWrites.
func Check(ctx context.Context, r Resource, o Options) (Report, error) {
	o = o.withDefaults()
	rep := Report{Seed: o.Seed}
	var mu sync.Mutex // guards rep
	work := make(chan int)
	var wg sync.WaitGroup
	for range o.Parallel {
		wg.Go(func() {
			for i := range work {
				tr := runTrial(ctx, r, o, i)
				mu.Lock()
				rep.add(tr)
				mu.Unlock()
			}
		})
	}
feed:
	for i := range o.Trials {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return rep, context.Cause(ctx)
}

// runTrial runs trial i: its scenario (by i, so that every run has each),
// its final read, and the check of its history.
func runTrial(parent context.Context, r Resource, o Options, i int) *trial {
	seed := uint64(o.Seed) + uint64(i)*0x9e3779b97f4a7c15
	tr := &trial{
		r:   r,
		key: fmt.Sprintf("%s%d", o.KeyPrefix, i),
		rng: rand.New(rand.NewPCG(seed, 1)),
		h:   newHistory(),
	}
	ctx, cancel := context.WithTimeoutCause(parent, o.Timeout, fmt.Errorf("fencetest: trial %d took over %v", i, o.Timeout))
	defer cancel()
	// Tokens from a random base; the first trial takes the largest ones a
	// fence accepts.
	base := 1 + uint64(tr.rng.IntN(1000))
	if i == 0 {
		base = fence.MaxToken - 2
	}
	var values int64
	scenarios := 3
	se, ends := r.(SessionEnder)
	if ends {
		scenarios = 4
	}
	switch i % scenarios {
	case 3:
		tr.sessionEnds(ctx, se, base, &values)
	case 0:
		tr.pausedHolder(ctx, base, &values)
	case 1:
		tr.pausedInside(ctx, base, &values)
	case 2:
		tr.racing(ctx, base, &values, seed)
	}
	if ctx.Err() != nil {
		// Each call's times tell which waited: a write whose reply was
		// lost returns "never".
		tr.failf("%v; history: %s", context.Cause(ctx), tr.h.describe())
		return tr
	}
	tr.judgeFinal(ctx)
	switch tr.h.linearizable(10 * time.Second) {
	case porcupine.Illegal:
		tr.notLinearizable = true
	case porcupine.Unknown:
		tr.failf("the linearizability check timed out")
	}
	return tr
}

// add counts a trial's writes and findings into the report.
func (rep *Report) add(tr *trial) {
	rep.Trials++
	for _, w := range tr.writes {
		switch w.outcome {
		case outApplied:
			rep.Applied++
		case outStale:
			rep.Refused++
		case outUnknown:
			rep.Unknown++
		}
	}
	rep.Retries += tr.retries
	rep.StaleWrites = append(rep.StaleWrites, tr.stale...)
	rep.Failures = append(rep.Failures, tr.failures...)
	if tr.notLinearizable {
		rep.NotLinearizable = append(rep.NotLinearizable, fmt.Sprintf("key %q: %s", tr.key, tr.h.describe()))
	}
}
