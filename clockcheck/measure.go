package clockcheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// DefaultMaxOffset is the limit to pass to [Check] unless the caller knows
// better. It is also the default of the dsync command's "clock" subcommand
// (dsync clock --max).
//
// A host synchronized by NTP is normally within a few tens of milliseconds of
// its database; half a second is far outside that, so exceeding it means
// clock synchronization is broken rather than noisy. It is also well above
// the uncertainty of a measurement over any usable network path (half the
// round trip plus 1 ms), so a healthy host does not fail the check by bad
// luck. Lease expiry does not depend on this limit: an [Estimator] judges it
// in server time, whatever the offset, and so are the time stamps of
// leader/mongo's member status. The check protects what does read the
// local clock: time stamps in logs, and user code.
const DefaultMaxOffset = 500 * time.Millisecond

// resolution is the resolution of the server's localTime (a BSON date,
// in milliseconds). It is part of every sample's uncertainty.
const resolution = time.Millisecond

// A Sample is one measurement of the local clock against the server's.
type Sample struct {
	// Offset is the server's time minus the local wall time at the sample:
	// add it to a local wall-clock reading to get server time.
	Offset time.Duration
	// Uncertainty bounds the error of Offset and of ServerTime as the
	// server's time at Taken: |true offset − Offset| <= Uncertainty.
	// It is RTT/2 (rounded up) plus the server clock's resolution, 1 ms.
	Uncertainty time.Duration
	// RTT is the round-trip time of the hello command, on the monotonic clock.
	RTT time.Duration
	// ServerTime is the server's localTime reading.
	ServerTime time.Time
	// Taken is Clock.Monotonic at the midpoint of the round trip.
	Taken time.Duration
	// TakenWall is Clock.Wall at the midpoint of the round trip.
	TakenWall time.Time
}

// commander is the one server command clockcheck needs, so tests can inject
// a fake server.
type commander interface {
	// serverTime reads the server's clock once (hello's localTime, or a probe).
	serverTime(ctx context.Context) (time.Time, error)
	// name names the command in errors.
	name() string
}

type dbCommander struct{ db *mongo.Database }

func (dbCommander) name() string { return "hello" }

// probeCommander reads the server's time with a caller's Probe.
type probeCommander struct{ probe Probe }

func (c probeCommander) serverTime(ctx context.Context) (time.Time, error) { return c.probe(ctx) }

func (probeCommander) name() string { return "probe" }

// setup checks the arguments of Measure, Check and NewEstimator and
// returns what samples the server's time: the probe set in opts (then db
// may be nil), else hello on db. A nil db without a probe is
// ErrNilDatabase, whatever the options.
func setup(db *mongo.Database, opts []Option) (commander, *config, error) {
	if db == nil && !hasProbe(opts) {
		return nil, nil, ErrNilDatabase
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	if cfg.probe != nil {
		return probeCommander{cfg.probe}, cfg, nil
	}
	return dbCommander{db}, cfg, nil
}

func (c dbCommander) serverTime(ctx context.Context) (time.Time, error) {
	return helloTime(ctx, func(ctx context.Context, cmd bson.D) (bson.Raw, error) {
		return c.db.RunCommand(ctx, cmd).Raw()
	})
}

// helloTime asks for the server's time with hello and, if the server
// answers hello with a command error (servers before MongoDB 4.4.2 do not
// know the name; some compatible servers and proxies refuse it
// otherwise) or with a reply without localTime, with the legacy isMaster.
// Only a failure to talk to the server, or the end of ctx, is returned
// without trying isMaster.
func helloTime(ctx context.Context, run func(context.Context, bson.D) (bson.Raw, error)) (time.Time, error) {
	raw, err := run(ctx, bson.D{{Key: "hello", Value: 1}})
	if err == nil {
		t, lerr := localTime(raw)
		if lerr == nil {
			return t, nil
		}
		err = lerr
	}
	var se mongo.ServerError
	if ctx.Err() != nil || !(errors.Is(err, ErrNoLocalTime) || errors.As(err, &se)) {
		return time.Time{}, err
	}
	raw, err2 := run(ctx, bson.D{{Key: "isMaster", Value: 1}})
	if err2 == nil {
		t, lerr := localTime(raw)
		if lerr == nil {
			return t, nil
		}
		err2 = lerr
	}
	if !errors.Is(err, ErrNoLocalTime) && !errors.Is(err2, ErrNoLocalTime) && !errors.As(err2, &se) {
		return time.Time{}, err2 // isMaster could not reach the server: say why
	}
	return time.Time{}, &noServerTimeError{hello: err, isMaster: err2}
}

// noServerTimeError: neither hello nor isMaster told the server's time.
type noServerTimeError struct{ hello, isMaster error }

func (e *noServerTimeError) Error() string {
	return fmt.Sprintf("clockcheck: the server reports no time: neither hello nor isMaster answered with a localTime date (hello: %v; isMaster: %v)",
		e.hello, e.isMaster)
}

// Unwrap returns ErrNoLocalTime and both commands' errors.
func (e *noServerTimeError) Unwrap() []error { return []error{ErrNoLocalTime, e.hello, e.isMaster} }

// localTime extracts the localTime date from a hello reply.
func localTime(reply bson.Raw) (time.Time, error) {
	v, err := reply.LookupErr("localTime")
	if err != nil {
		return time.Time{}, ErrNoLocalTime
	}
	ms, ok := v.DateTimeOK()
	if !ok {
		return time.Time{}, fmt.Errorf("%w (it is a BSON %v)", ErrNoLocalTime, v.Type)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// Measure samples the server's time several times and returns the best
// sample. It samples with the hello command (see [WithSamples] for how
// many) and returns the sample with the smallest round-trip time. It needs
// no privileges beyond a connection. A server that answers hello with a
// command error (servers before MongoDB 4.4.2 do not know it), or with no
// localTime, is asked with the legacy isMaster instead.
//
// Errors: [ErrNilDatabase] at once for a nil db; a failed command (an
// unreachable server, say) as "clockcheck: hello: ..." wrapping the driver's
// error and, when ctx has ended, [context.Cause] of ctx; an error matching
// [ErrNoLocalTime], naming both commands' failures, when neither hello nor
// isMaster reports the server's time. When ctx ends after at least one
// round trip returned, it returns the best of those, with no error: a
// wider uncertainty, never a wrong one.
func Measure(ctx context.Context, db *mongo.Database, opts ...Option) (Sample, error) {
	cmd, cfg, err := setup(db, opts)
	if err != nil {
		return Sample{}, err
	}
	return measure(ctx, cmd, cfg)
}

// Check measures as [Measure] does and reports a clock certainly too far
// off. It returns an [*OffsetError] when the local wall clock is certainly
// more than maxOffset away from the server's, that is when |Offset| -
// Uncertainty > maxOffset. A clock that may be within the limit passes. The
// sample is returned in either case.
//
// Pick [DefaultMaxOffset] unless you know better. A negative maxOffset is an
// error.
func Check(ctx context.Context, db *mongo.Database, maxOffset time.Duration, opts ...Option) (Sample, error) {
	cmd, cfg, err := setup(db, opts)
	if err != nil {
		return Sample{}, err
	}
	return check(ctx, cmd, maxOffset, cfg)
}

// hasProbe reports whether opts set a probe, so that a nil db is no error.
func hasProbe(opts []Option) bool {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg.probe != nil
}

func check(ctx context.Context, cmd commander, maxOffset time.Duration, cfg *config) (Sample, error) {
	if maxOffset < 0 {
		return Sample{}, fmt.Errorf("clockcheck: negative maxOffset %v", maxOffset)
	}
	s, err := measure(ctx, cmd, cfg)
	if err != nil {
		return s, err
	}
	if abs(s.Offset)-s.Uncertainty > maxOffset {
		return s, &OffsetError{Offset: s.Offset, Uncertainty: s.Uncertainty, Limit: maxOffset}
	}
	return s, nil
}

func measure(ctx context.Context, cmd commander, cfg *config) (Sample, error) {
	var best Sample
	for i := range cfg.samples {
		s, err := sample(ctx, cmd, cfg.clock)
		if err != nil {
			if i > 0 && ctx.Err() != nil {
				// Each round trip that returned bounds the server's
				// time on its own, within its own uncertainty: fewer
				// only widen the interval. A caller that gives up on
				// a slow server (a bound per attempt) keeps what its
				// attempt learned, instead of starting the next
				// attempt from nothing, which on a server slower than
				// a fifth of that bound would never end.
				return best, nil
			}
			return Sample{}, err
		}
		if i == 0 || s.RTT < best.RTT {
			best = s
		}
	}
	return best, nil
}

// sample makes one round trip.
//
// The bound. Let m0 and m1 be the monotonic readings before sending and after
// receiving, RTT = m1 − m0, and mid = m0 + RTT/2. The server read its clock
// at some instant within the round trip, so within ⌈RTT/2⌉ of mid, whichever
// leg the delay was on; and it truncated the reading to the millisecond, so
// its true time then was in [localTime, localTime + 1 ms). Hence the server's
// time at mid lies in [localTime − ⌈RTT/2⌉, localTime + ⌈RTT/2⌉ + 1 ms):
// within Uncertainty = ⌈RTT/2⌉ + 1 ms of ServerTime. This takes the server's
// clock to advance at the rate of the local monotonic clock during the round
// trip; the Estimator adds the drift over that half round trip too.
//
// Wall is read once, after the reply, and moved back to mid by the monotonic
// clock, so a wall-clock jump during the round trip cannot distort Offset:
// Offset then describes the wall clock as it is after the jump.
func sample(ctx context.Context, cmd commander, clk Clock) (Sample, error) {
	if ctx.Err() != nil {
		return Sample{}, fmt.Errorf("clockcheck: %s: %w", cmd.name(), context.Cause(ctx))
	}
	m0 := clk.Monotonic()
	st, err := cmd.serverTime(ctx)
	m1 := clk.Monotonic()
	w1 := clk.Wall()
	if err != nil {
		return Sample{}, sampleError(ctx, cmd.name(), err)
	}
	return sampleOf(m0, m1, w1, st)
}

// sampleOf is the sample of a round trip sent at monotonic m0 and answered
// at m1 (wall w1) with server time st; see sample for the bound.
func sampleOf(m0, m1 time.Duration, w1, st time.Time) (Sample, error) {
	rtt := m1 - m0
	if rtt < 0 {
		return Sample{}, fmt.Errorf("clockcheck: monotonic clock went backwards by %v", -rtt)
	}
	taken := m0 + rtt/2
	takenWall := w1.Add(-(m1 - taken))
	return Sample{
		Offset:      st.Sub(takenWall),
		Uncertainty: (rtt - rtt/2) + resolution,
		RTT:         rtt,
		ServerTime:  st,
		Taken:       taken,
		TakenWall:   takenWall,
	}, nil
}

func sampleError(ctx context.Context, name string, err error) error {
	if errors.Is(err, ErrNoLocalTime) {
		return err
	}
	// The driver's error does not always wrap the context's cause (a
	// WithCancelCause cause, say); callers deserve to see why.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("clockcheck: %s: %w: %w", name, cause, err)
	}
	return fmt.Errorf("clockcheck: %s: %w", name, err)
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
