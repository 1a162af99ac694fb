package clockcheck

import (
	"context"
	"errors"
	"sync"
	"time"
)

// world simulates the true time, a server's clock and this machine's clocks
// inside a synctest bubble, where time.Now is the true time. It implements
// both commander (the server) and Clock (the local clocks).
type world struct {
	origin time.Time // true time at creation

	mu          sync.Mutex
	serverStart time.Time     // server clock at origin
	serverRate  float64       // server clock advance per unit of true time
	localRate   float64       // local monotonic advance per unit of true time
	monoBase    time.Duration // local monotonic at origin
	wallSkew    time.Duration // local wall − true time; jumps change it
	// legs returns the delay before and after the server reads its clock,
	// for the i-th call.
	legs func(i int) (up, down time.Duration)
	// fail, if set, returns the error of the i-th call (nil for success).
	fail func(i int) error
	// jumpInFlight is added to wallSkew while the next call is in flight,
	// after the server read its clock.
	jumpInFlight time.Duration
	noLocalTime  bool
	calls        int
}

func newWorld() *world {
	now := time.Now()
	return &world{
		origin: now,
		// A server clock not aligned to the millisecond, so that its
		// truncation matters.
		serverStart: now.Add(737 * time.Microsecond),
		serverRate:  1,
		localRate:   1,
		monoBase:    17 * time.Hour,
		legs:        func(int) (time.Duration, time.Duration) { return 0, 0 },
	}
}

func scale(d time.Duration, rate float64) time.Duration {
	return time.Duration(float64(d) * rate)
}

// serverNow is the server's (true, untruncated) clock now.
func (w *world) serverNow() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.serverStart.Add(scale(time.Since(w.origin), w.serverRate))
}

// stepServer steps the server's clock by d.
func (w *world) stepServer(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.serverStart = w.serverStart.Add(d)
}

// setLegs changes the delays of the calls to come, while an Estimator's
// goroutine may be making one.
func (w *world) setLegs(legs func(i int) (up, down time.Duration)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.legs = legs
}

// jumpWall steps the local wall clock by d.
func (w *world) jumpWall(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wallSkew += d
}

// trueOffset is the server's time minus the local wall time, now.
func (w *world) trueOffset() time.Duration {
	return w.serverNow().Sub(w.Wall())
}

func (w *world) Wall() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now().Add(w.wallSkew)
}

func (w *world) Monotonic() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.monoBase + scale(time.Since(w.origin), w.localRate)
}

func (w *world) serverTime(ctx context.Context) (time.Time, error) {
	w.mu.Lock()
	i := w.calls
	w.calls++
	up, down := w.legs(i)
	var failErr error
	if w.fail != nil {
		failErr = w.fail(i)
	}
	jump := w.jumpInFlight
	w.jumpInFlight = 0
	noLocalTime := w.noLocalTime
	w.mu.Unlock()

	if err := sleepCtx(ctx, up); err != nil {
		return time.Time{}, err
	}
	if failErr != nil {
		return time.Time{}, failErr
	}
	// Truncated to the millisecond as in a BSON date.
	st := time.UnixMilli(w.serverNow().UnixMilli()).UTC()
	w.jumpWall(jump)
	if err := sleepCtx(ctx, down); err != nil {
		return time.Time{}, err
	}
	if noLocalTime {
		return time.Time{}, ErrNoLocalTime
	}
	return st, nil
}

func (w *world) callCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errServerDown = errors.New("server down")

// fixedLegs returns legs giving each call the round-trip time rtt, a
// fraction upShare of it before the server reads its clock.
func fixedLegs(rtt time.Duration, upShare float64) func(int) (time.Duration, time.Duration) {
	return func(int) (time.Duration, time.Duration) {
		up := scale(rtt, upShare)
		return up, rtt - up
	}
}

func (w *world) name() string { return "hello" }
