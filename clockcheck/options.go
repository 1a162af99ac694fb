package clockcheck

import (
	"context"
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

// An Option configures [Measure], [Check] or [NewEstimator]. Options that do
// not apply to a function (such as [WithInterval] for [Measure]) are still
// validated, and otherwise ignored.
type Option func(*config)

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
	// errs collects invalid option values; reported by newConfig.
	errs []error
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
		if o != nil {
			o(c)
		}
	}
	if len(c.errs) > 0 {
		return nil, c.errs[0]
	}
	return c, nil
}

func (c *config) invalid(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("clockcheck: invalid option: "+format, args...))
}

// WithClock sets the local clock. The default is [SystemClock]. Tests inject
// a clock to simulate a wrong or jumping wall clock. A nil clock is an error.
func WithClock(c Clock) Option {
	return func(cfg *config) {
		if c == nil {
			cfg.invalid("WithClock(nil)")
			return
		}
		cfg.clock = c
	}
}

// WithSamples sets how many round trips a measurement makes. The one with
// the smallest round-trip time, and so the smallest uncertainty, is kept.
// The default is [DefaultSamples] (5). n must be at least 1.
func WithSamples(n int) Option {
	return func(cfg *config) {
		if n < 1 {
			cfg.invalid("WithSamples(%d): need at least 1", n)
			return
		}
		cfg.samples = n
	}
}

// WithInterval sets how often an [Estimator] re-samples in the background.
// The default is [DefaultInterval] (1 minute). d must be positive. A
// re-sample that takes longer than d is abandoned.
func WithInterval(d time.Duration) Option {
	return func(cfg *config) {
		if d <= 0 {
			cfg.invalid("WithInterval(%v): must be positive", d)
			return
		}
		cfg.interval = d
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
	return func(cfg *config) {
		if !(rate >= 0 && rate < 0.1) { // also rejects NaN
			cfg.invalid("WithMaxDrift(%v): must be in [0, 0.1)", rate)
			return
		}
		cfg.maxDrift = rate
	}
}

// WithLogger sets where an [Estimator] reports its re-samples. Failed
// re-samples and inconsistent samples are reported at level Warn, new
// samples at level Debug. The default is [slog.Default], as in the rest of
// dsync; pass slog.New(slog.DiscardHandler) to silence it. A nil logger is
// an error.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) {
		if l == nil {
			cfg.invalid("WithLogger(nil)")
			return
		}
		cfg.logger = l
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
	return func(cfg *config) {
		if p == nil {
			cfg.invalid("WithProbe(nil)")
			return
		}
		cfg.probe = p
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
	return func(cfg *config) {
		if d < 0 {
			cfg.invalid("WithMemberSkew(%v): must be at least 0", d)
			return
		}
		cfg.memberSkew = d
	}
}
