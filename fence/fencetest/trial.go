package fencetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-dsync/dsync/fence"
)

// A trial is one scenario on one key.
type trial struct {
	r   Resource
	key string
	rng *rand.Rand // only the trial's own goroutine draws from it; holders get their own
	h   *history

	mu       sync.Mutex
	writes   []writeRecord
	retries  int
	stale    []string
	failures []string

	notLinearizable bool
}

// writeRecord is a write the trial sent, and what became of it.
type writeRecord struct {
	token   uint64
	value   int64
	outcome outcome
}

func (tr *trial) failf(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.failures = append(tr.failures, fmt.Sprintf("key %q: ", tr.key)+fmt.Sprintf(format, args...))
}

func (tr *trial) stalef(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.stale = append(tr.stale, fmt.Sprintf("key %q: ", tr.key)+fmt.Sprintf(format, args...))
}

// write sends one write and records it.
func (tr *trial) write(ctx context.Context, token uint64, value int64, admitted func(context.Context) error) outcome {
	call := tr.h.now()
	err := tr.r.Write(ctx, Write{Key: tr.key, Token: token, Value: value, Admitted: admitted})
	out := outApplied
	switch {
	case err == nil:
	case errors.Is(err, fence.ErrStale):
		out = outStale
	default:
		out = outUnknown
	}
	tr.h.add(call, opInput{kind: opWrite, token: token, value: value}, opOutput{outcome: out})
	tr.mu.Lock()
	tr.writes = append(tr.writes, writeRecord{token: token, value: value, outcome: out})
	tr.mu.Unlock()
	return out
}

// writeRetried sends a write, and sends it again, with the same token and
// value, while its outcome is unknown (at most three times in all), as a
// client retries a statement whose reply it lost. The first send's
// context is lossy: it may end while the write is under way.
func (tr *trial) writeRetried(ctx, lossy context.Context, token uint64, value int64, admitted func(context.Context) error) outcome {
	out := tr.write(lossy, token, value, admitted)
	for i := 0; out == outUnknown && i < 2 && ctx.Err() == nil; i++ {
		tr.mu.Lock()
		tr.retries++
		tr.mu.Unlock()
		out = tr.write(ctx, token, value, nil)
	}
	return out
}

// read reads the register and records it; a failed read is a failure of
// the trial, not a finding.
func (tr *trial) read(ctx context.Context) (int64, bool) {
	call := tr.h.now()
	v, err := tr.r.Read(ctx, tr.key)
	if err != nil {
		tr.failf("Read: %v", err)
		return 0, false
	}
	tr.h.add(call, opInput{kind: opRead}, opOutput{outcome: outRead, value: v})
	return v, true
}

// judgeFinal reads the register after every write of the trial returned,
// and reports a stale write if it holds the value of a write whose token
// is below that of a write that applied. A lost reply's write counts as
// applied only if the register shows it.
func (tr *trial) judgeFinal(ctx context.Context) {
	v, ok := tr.read(ctx)
	if !ok {
		return
	}
	tr.mu.Lock()
	writes := append([]writeRecord(nil), tr.writes...)
	tr.mu.Unlock()
	var top uint64
	for _, w := range writes {
		if w.outcome == outApplied {
			top = max(top, w.token)
		}
	}
	for _, w := range writes {
		if w.value == v && w.token < top {
			tr.stalef("the register holds %d, written under token %d, after a write under token %d applied", v, w.token, top)
			return
		}
	}
}

// pause sleeps for up to max, drawn from rng, or until ctx ends.
func pause(ctx context.Context, rng *rand.Rand, max time.Duration) error {
	d := time.Duration(rng.Int64N(int64(max) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
