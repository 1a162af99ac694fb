package clockcheck

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/internal/errtext"
)

// An Interval is a range of possible server times. Its ends are wall times
// in the server's terms. Both ends are inclusive.
type Interval struct {
	Earliest, Latest time.Time
}

// Contains reports whether t lies within the interval.
func (iv Interval) Contains(t time.Time) bool {
	return !t.Before(iv.Earliest) && !t.After(iv.Latest)
}

// An Estimator tells the server's current time within a proven interval. It
// does not ask the server each time. It keeps the best sample it has and
// re-samples in the background (see [WithInterval]) until Closed. A
// caller whose own commands read the server's time can feed it samples
// instead ([Estimator.Sampled]).
//
// The interval is computed from the sample and the local monotonic clock
// only, never from the local wall clock, so it stays correct however far
// off the wall clock is or however it jumps. It is
//
//	ServerTime + elapsed ± (Uncertainty + memberSkew + maxDrift × (elapsed + ⌈RTT/2⌉))
//
// where elapsed is Clock.Monotonic() − Taken: the sample's own uncertainty,
// widened in both directions by the bound on the skew between the servers
// that may answer (see [WithMemberSkew], 0 by default) and by the drift the
// clocks may have accumulated since the request was sent (see
// [WithMaxDrift]).
//
// An Estimator is safe for concurrent use.
type Estimator struct {
	cmd    commander
	cfg    *config
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// kick asks run for a re-sample now whose sample replaces the one in
	// use (ResampleNow); one pending request stands for any number.
	kick chan struct{}

	mu  sync.Mutex
	cur Sample
	// offered is when the last sample given by Sampled was taken
	// (Clock.Monotonic), if hasOffered.
	offered    time.Duration
	hasOffered bool
}

// NewEstimator measures as [Measure] does, then starts re-sampling in the
// background. If the measurement fails, it returns its error. Re-sampling
// runs in a goroutine the Estimator owns, every [WithInterval] (default 1
// minute), until [Estimator.Close]. ctx bounds the first measurement only;
// the background goroutine keeps its values but not its cancellation.
//
// [Estimator.Sample] says when a re-sample replaces the sample in use. A
// failed re-sample keeps the sample in use, whose interval just keeps
// widening, and is logged (see [WithLogger]).
func NewEstimator(ctx context.Context, db *mongo.Database, opts ...Option) (*Estimator, error) {
	cmd, cfg, err := setup(db, opts)
	if err != nil {
		return nil, err
	}
	return newEstimator(ctx, cmd, cfg)
}

func newEstimator(ctx context.Context, cmd commander, cfg *config) (*Estimator, error) {
	s, err := measure(ctx, cmd, cfg)
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &Estimator{cmd: cmd, cfg: cfg, cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1), cur: s}
	go e.run(bg)
	return e, nil
}

// Now returns the earliest and latest possible server time now. The true
// server time lies within it as long as the package's assumptions hold (see
// the package documentation). It keeps working after Close, from the last
// sample, widening as time passes.
func (e *Estimator) Now() Interval {
	s := e.Sample()
	// Read the clock after the sample, so that it is never earlier than
	// the sample's Taken.
	return e.intervalAt(s, e.cfg.clock.Monotonic())
}

// Until returns how long to wait until Now().Earliest is certainly at or
// after t. The wait is on the local monotonic clock (a [time.Timer], say).
// It is 0 if Earliest already is. It accounts for drift: Earliest advances
// by only 1−maxDrift per unit of local time.
//
// The answer comes from the sample in use. A re-sample during the wait may
// replace it with one whose Earliest is earlier (a little, or, after a
// change of server, by up to the uncertainties plus twice the member skew),
// so after waiting, check Now().Earliest again and wait again if needed.
func (e *Estimator) Until(t time.Time) time.Duration {
	s := e.Sample()
	now := e.cfg.clock.Monotonic()
	earliest := e.intervalAt(s, now).Earliest
	if !earliest.Before(t) {
		return 0
	}
	// Earliest advances at 1−maxDrift per unit of monotonic time. The
	// loop corrects for rounding: halfWidth rounds up.
	var w time.Duration
	for earliest.Before(t) {
		step := float64(t.Sub(earliest)) / (1 - e.cfg.maxDrift)
		if step >= float64(math.MaxInt64-w) {
			return math.MaxInt64
		}
		w += time.Duration(math.Ceil(step))
		earliest = e.intervalAt(s, now+w).Earliest
	}
	return w
}

// Sample returns the sample in use. That is the one giving the narrowest
// interval now, unless a later sample replaced it. A later sample replaces
// it if its interval did not even overlap it (the server's clock was
// stepped, the drift bound was exceeded, or the machine was suspended). A
// later sample also replaces it if it was asked for with
// [Estimator.ResampleNow], or if a member skew is set ([WithMemberSkew]).
func (e *Estimator) Sample() Sample {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

// Close stops the background re-sampling and waits for its goroutine to
// exit. It is idempotent and always returns nil.
func (e *Estimator) Close() error {
	e.once.Do(func() {
		e.cancel()
		<-e.done
	})
	return nil
}

// ResampleNow asks for a re-sample at once, in the background. Its sample
// replaces the one in use even if its interval is wider. Call it when the
// server that answers the samples may have changed (a replica set elected a
// new primary, or a command failed because the server it reached is no
// longer primary). The estimate then follows the new server's clock rather
// than the old one's. Until the re-sample succeeds the old sample stays in
// use; [WithMemberSkew] is what keeps its interval right meanwhile. It does
// not block; requests made while one is pending are served by that one. A
// failed re-sample is logged and not repeated until the next request or the
// next periodic re-sample.
func (e *Estimator) ResampleNow() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Sampled makes the round trip f and times it as a sample. f is a command
// the caller sends anyway whose reply carries the server's time (such as a
// write with $currentDate read back in the same command). Sampled keeps the
// sample if its interval is narrower now than the one in use's, or if it
// contradicts it. It returns f's error; a failed f, or one that returns the
// zero time (its reply carried no time), gives no sample. f must read the
// clock of the server the other samples read (see [WithProbe]).
//
// Without a member skew ([WithMemberSkew] 0: one server), a periodic
// re-sample is skipped while samples come this way at least once per
// interval. With one, periodic re-samples go on: each replaces the sample
// in use, to follow a failover.
func (e *Estimator) Sampled(ctx context.Context, f func(context.Context) (time.Time, error)) error {
	clk := e.cfg.clock
	m0 := clk.Monotonic()
	st, err := f(ctx)
	m1 := clk.Monotonic()
	w1 := clk.Wall()
	if err != nil || st.IsZero() {
		return err // a zero time: the reply carried none
	}
	s, err := sampleOf(m0, m1, w1, st)
	if err != nil {
		// f succeeded; only its timing is unusable.
		e.cfg.logger.Debug("clockcheck: no sample from the caller's command", slog.Any("err", err))
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keepLocked(s, false)
	e.offered, e.hasOffered = s.Taken, true
	return nil
}

func (e *Estimator) run(ctx context.Context) {
	defer close(e.done)
	tick := time.NewTicker(e.cfg.interval)
	defer tick.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if e.fedBySampled() {
				continue
			}
		case <-e.kick:
			force = true
		}
		e.resample(ctx, force)
	}
}

// fedBySampled reports whether a periodic re-sample can be skipped: one
// server, and Sampled gave a sample within the last interval.
func (e *Estimator) fedBySampled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg.memberSkew == 0 && e.hasOffered && e.cfg.clock.Monotonic()-e.offered < e.cfg.interval
}

// resample measures and keeps the new sample if it is narrower now, if it
// contradicts the one in use, or if the server may have changed: asked by
// ResampleNow (force), or, with a member skew, at every re-sample, since a
// failover can move the samples to another server without notice.
func (e *Estimator) resample(ctx context.Context, force bool) {
	// A re-sample must not run into the next one.
	rctx, cancel := context.WithTimeout(ctx, e.cfg.interval)
	defer cancel()
	s, err := measure(rctx, e.cmd, e.cfg)
	if ctx.Err() != nil {
		return // closing
	}
	log := e.cfg.logger
	if err != nil {
		log.Warn("clockcheck: re-sample failed; keeping the previous sample",
			slog.Any("err", errtext.Tidy(err)), slog.Duration("age", e.cfg.clock.Monotonic()-e.Sample().Taken))
		return
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	e.keepLocked(s, force || e.cfg.memberSkew > 0)
}

// keepLocked makes s the sample in use if replace is set, if its interval
// is narrower now, or if it contradicts the one in use. e.mu must be held.
func (e *Estimator) keepLocked(s Sample, replace bool) {
	log := e.cfg.logger
	now := e.cfg.clock.Monotonic()
	old, cur := e.intervalAt(e.cur, now), e.intervalAt(s, now)
	switch {
	case cur.Latest.Before(old.Earliest) || cur.Earliest.After(old.Latest):
		log.Warn("clockcheck: server time outside the estimate (server clock stepped, drift above the bound, or machine suspended); using the new sample",
			slog.Time("earliest", old.Earliest), slog.Time("latest", old.Latest),
			slog.Time("server", s.ServerTime), slog.Duration("uncertainty", s.Uncertainty))
		e.cur = s
	case replace:
		log.Debug("clockcheck: new sample, from a server that may have changed", slog.Duration("offset", s.Offset), slog.Duration("uncertainty", s.Uncertainty),
			slog.Duration("moved", s.ServerTime.Add(now-s.Taken).Sub(e.cur.ServerTime.Add(now-e.cur.Taken))))
		e.cur = s
	case e.halfWidth(s, now) <= e.halfWidth(e.cur, now):
		log.Debug("clockcheck: new sample", slog.Duration("offset", s.Offset), slog.Duration("uncertainty", s.Uncertainty))
		e.cur = s
	}
}

// intervalAt is the interval of possible server times at monotonic time now
// according to s; see the Estimator's documentation for the formula.
func (e *Estimator) intervalAt(s Sample, now time.Duration) Interval {
	mid := s.ServerTime.Add(now - s.Taken)
	hw := e.halfWidth(s, now)
	return Interval{Earliest: mid.Add(-hw), Latest: mid.Add(hw)}
}

// halfWidth is the Uncertainty of s plus the drift since the request was
// sent (half a round trip before Taken), rounded up, plus the bound on the
// skew between the servers that may answer (WithMemberSkew).
func (e *Estimator) halfWidth(s Sample, now time.Duration) time.Duration {
	since := abs(now-s.Taken) + (s.RTT - s.RTT/2)
	return s.Uncertainty + e.cfg.memberSkew + time.Duration(math.Ceil(e.cfg.maxDrift*float64(since)))
}
