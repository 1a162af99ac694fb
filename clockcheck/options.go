package clockcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultSamples is the number of round trips [Measure] makes; see [WithSamples].
	DefaultSamples = 5
	// DefaultInterval is how often an [Estimator] re-samples; see [WithInterval].
	DefaultInterval = time.Minute
	// DefaultMaxDrift is the assumed bound on the rate difference between
	// the local monotonic clock and the server's clock; see [WithMaxDrift].
	DefaultMaxDrift = 500e-6
)

// An Option configures [Measure], [Check] or [NewEstimator]. A bad value
// (or a nil Option) is an error the function returns. Options that do not
// apply to a function (such as [WithInterval] for [Measure]) are still
// validated, and otherwise ignored.
type Option func(*config) error

type config struct {
	clock    Clock
	samples  int
	interval time.Duration
	maxDrift float64
	logger   *slog.Logger
	// probe, if set, reads the server's time instead of hello (WithProbe).
	probe Probe
	// memberSkew widens every Estimator interval (WithMemberSkew).
	memberSkew time.Duration
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		clock:    SystemClock(),
		samples:  DefaultSamples,
		interval: DefaultInterval,
		maxDrift: DefaultMaxDrift,
		logger:   slog.Default(),
	}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("clockcheck: nil option")
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// invalid is the error of an option's bad value.
func invalid(format string, args ...any) error {
	return fmt.Errorf("clockcheck: invalid option: "+format, args...)
}

// WithClock sets the local clock. The default is [SystemClock]. Tests inject
// a clock to simulate a wrong or jumping wall clock. A nil clock is an error.
func WithClock(c Clock) Option {
	return func(cfg *config) error {
		if c == nil {
			return invalid("WithClock(nil)")
		}
		cfg.clock = c
		return nil
	}
}

// WithSamples sets how many round trips a measurement makes. The one with
// the smallest round-trip time, and so the smallest uncertainty, is kept.
// A measurement whose context ends after at least one returned keeps the
// best of those. The default is [DefaultSamples] (5). n must be at least 1.
func WithSamples(n int) Option {
	return func(cfg *config) error {
		if n < 1 {
			return invalid("WithSamples(%d): need at least 1", n)
		}
		cfg.samples = n
		return nil
	}
}

// WithInterval sets how often an [Estimator] re-samples in the background.
// The default is [DefaultInterval] (1 minute). d must be positive. A
// re-sample that takes longer than d is abandoned.
func WithInterval(d time.Duration) Option {
	return func(cfg *config) error {
		if d <= 0 {
			return invalid("WithInterval(%v): must be positive", d)
		}
		cfg.interval = d
		return nil
	}
}

// WithMaxDrift sets the assumed bound on the rate at which the two clocks
// drift apart. The clocks are the local monotonic clock and the server's:
// over a local monotonic duration d, the server's clock advances by between
// d*(1-rate) and d*(1+rate). An [Estimator]'s interval widens by rate times
// the time since the sample, in both directions.
//
// The default is [DefaultMaxDrift] (500e-6, 500 ppm, the bound NTP assumes for
// an undisciplined clock; disciplined clocks do far better). rate must be in
// [0, 0.1).
func WithMaxDrift(rate float64) Option {
	return func(cfg *config) error {
		if !(rate >= 0 && rate < 0.1) { // also rejects NaN
			return invalid("WithMaxDrift(%v): must be in [0, 0.1)", rate)
		}
		cfg.maxDrift = rate
		return nil
	}
}

// WithLogger sets where an [Estimator] reports its re-samples. Failed
// re-samples and inconsistent samples are reported at level Warn, new
// samples at level Debug. The default is [slog.Default], as in the rest of
// dsync; pass slog.New(slog.DiscardHandler) to silence it. A nil logger is
// an error.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) error {
		if l == nil {
			return invalid("WithLogger(nil)")
		}
		cfg.logger = l
		return nil
	}
}

// A Probe reads the server's clock once, in one round trip. It returns the
// server's time as the server read it at some instant between the call and
// its return, to the millisecond or finer. It must not return a time read
// before it was called (a cached one) or after it returned.
type Probe func(ctx context.Context) (time.Time, error)

// WithProbe makes samples read the server's time with p instead of the
// hello command. Use it when hello may be answered by another host than
// the one whose clock matters: behind a mongos or a load balancer, hello
// reports the router's clock, while a write with $currentDate, read back in
// the same command, reports the clock of the primary that applies it (this
// is what package dsyncmongo does). With a probe, [Measure], [Check] and
// [NewEstimator] accept a nil db, and their errors name the probe instead
// of hello. A nil p is an error.
func WithProbe(p Probe) Option {
	return func(cfg *config) error {
		if p == nil {
			return invalid("WithProbe(nil)")
		}
		cfg.probe = p
		return nil
	}
}

// WithMemberSkew widens every interval an [Estimator] gives by d on each
// side. d is the bound on how far apart the clocks of the servers that may
// answer its samples are. On a replica set, a failover hands the writes,
// and the samples, to another member, whose clock NTP keeps within some
// bound of the former primary's. Until a sample of the new primary replaces
// the old one (see [Estimator.ResampleNow]), the interval holds the new
// primary's time only if it is that much wider. With d > 0 every periodic
// re-sample replaces the sample in use, even a narrower one, so that a
// change of server no one reported is followed within the re-sample
// interval. The default is 0: one server. d must be at least 0.
func WithMemberSkew(d time.Duration) Option {
	return func(cfg *config) error {
		if d < 0 {
			return invalid("WithMemberSkew(%v): must be at least 0", d)
		}
		cfg.memberSkew = d
		return nil
	}
}
