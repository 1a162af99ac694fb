package fencetest

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// The scenarios. Each runs on its trial's fresh key, with tokens from
// base up, and returns once every write it sent has returned.

// pausedHolder: holder A takes base (and half the time writes under it
// once), then pauses; holder B takes base+1 and writes; A wakes after B's
// write returned and writes under base: it must be refused.
func (tr *trial) pausedHolder(ctx context.Context, base uint64, values *int64) {
	if tr.rng.IntN(2) == 0 {
		tr.write(ctx, base, next(values), nil)
	}
	// The next holder's write applies (a refusal or a lost reply is
	// judged by the history's check).
	bApplied := tr.writeRetried(ctx, ctx, base+1, next(values), nil) == outApplied
	if tr.write(ctx, base, next(values), nil) == outApplied && bApplied {
		tr.stalef("a paused holder's write under token %d applied after the next holder's under %d had returned", base, base+1)
	}
}

// pausedInside: A's fence admits it, and A pauses inside its write until
// B, with base+1, has started its own and either returned or had up to a
// few milliseconds to get under way; then A goes on.
func (tr *trial) pausedInside(ctx context.Context, base uint64, values *int64) {
	hold := time.Duration(tr.rng.IntN(3000)) * time.Microsecond
	tr.pausedForB(ctx, base, values, hold, true, func(context.Context) error { return nil })
}

// sessionEnds: A's fence admits it, and the store ends the session
// under A (EndSession) while A is inside its write; then B, with base+1,
// starts its write, and A goes on once B's write returned or after a
// pause of 50 to 200 ms, long enough for B's write to be under way.
// Either order of the two writes may apply, but never A's after B's: the
// admission must outlive its session, or A's write must be refused.
func (tr *trial) sessionEnds(ctx context.Context, se SessionEnder, base uint64, values *int64) {
	hold := 50*time.Millisecond + time.Duration(tr.rng.IntN(150))*time.Millisecond
	tr.pausedForB(ctx, base, values, hold, false, func(ctx context.Context) error {
		if err := se.EndSession(ctx, tr.key); err != nil {
			tr.failf("EndSession: %v", err)
			return err
		}
		return nil
	})
}

// pausedForB is the shape of pausedInside and sessionEnds: A writes
// under base, and the first time its fence admits it, it runs enter
// (whose error ends A's write); then B writes under base+1. Inside its
// admission A waits (if waitB) for B to have started, then until B's
// write returned or hold passed, and goes on.
func (tr *trial) pausedForB(ctx context.Context, base uint64, values *int64, hold time.Duration, waitB bool, enter func(context.Context) error) {
	entered, bStarted, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	vA, vB := next(values), next(values)
	var once sync.Once
	admitted := func(ctx context.Context) error {
		var err error
		once.Do(func() {
			defer close(entered)
			err = enter(ctx)
		})
		if err != nil {
			return err
		}
		if waitB {
			select {
			case <-bStarted:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-bDone:
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer once.Do(func() { close(entered) }) // A refused or failed before its fence admitted it
		tr.write(ctx, base, vA, admitted)
	})
	wg.Go(func() {
		defer close(bDone)
		select {
		case <-entered:
		case <-ctx.Done():
			return
		}
		close(bStarted)
		tr.writeRetried(ctx, ctx, base+1, vB, nil)
	})
	wg.Wait()
}

// racing: three holders with tokens base to base+2 write at random
// moments, one to three times each, some pausing inside their writes;
// a quarter of the writes lose their reply (their context ends within
// two milliseconds) and are sent again; a reader reads meanwhile.
func (tr *trial) racing(ctx context.Context, base uint64, values *int64, seed uint64) {
	var wg sync.WaitGroup
	var mu sync.Mutex // guards values
	for h := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(h)+1))
		token := base + uint64(h)
		wg.Go(func() {
			for range 1 + rng.IntN(3) {
				if pause(ctx, rng, time.Millisecond) != nil {
					return
				}
				mu.Lock()
				v := next(values)
				mu.Unlock()
				var admitted func(context.Context) error
				if rng.IntN(2) == 0 {
					inside := time.Duration(rng.IntN(1000)) * time.Microsecond
					admitted = func(ctx context.Context) error {
						return pause(ctx, rand.New(rand.NewPCG(uint64(v), uint64(inside))), inside)
					}
				}
				lossy, cancel := ctx, context.CancelFunc(func() {})
				if rng.IntN(4) == 0 {
					lossy, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(2000))*time.Microsecond)
				}
				tr.writeRetried(ctx, lossy, token, v, admitted)
				cancel()
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	wg.Go(func() {
		for range 3 {
			if pause(ctx, rng, 2*time.Millisecond) != nil {
				return
			}
			tr.read(ctx)
		}
	})
	wg.Wait()
}

func next(values *int64) int64 {
	*values++
	return *values
}
