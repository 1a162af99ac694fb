package dsyncotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/go-dsync/dsync/dsync/event"
)

// Bucket boundaries, in seconds, given to the SDK as advice (a View may
// still replace them). Without them the SDK's defaults (0, 5, 10, ...
// 10000) would put every lock latency in the first bucket. They follow
// the OpenTelemetry semantic conventions' boundaries for HTTP durations
// (5 ms to 10 s), reaching down to a millisecond, a store's round trip,
// and up through the default TTL (15 s) to a minute, a wait for a holder
// that crashed.
var leaseBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75,
	1, 2.5, 5, 7.5, 10, 15, 30, 60,
}

// holdBuckets are for waits and holds, which last as long as the work
// under a lock: the lease's boundaries, then up to an hour.
var holdBuckets = append(append([]float64(nil), leaseBuckets...), 300, 900, 3600)

// kinds are the primitives whose counters are at 0 from the start (see
// zeroSeries).
var kinds = []event.Kind{
	event.KindMutex, event.KindRead, event.KindWrite, event.KindSemaphore,
	event.KindOnce, event.KindElection,
}

type instruments struct {
	keys              bool
	acquire, hold     metric.Float64Histogram
	renewal, headroom metric.Float64Histogram
	lost, renewFailed metric.Int64Counter
	dropped           metric.Int64Counter
	// outages, kept and suspended: outages of the whole store ridden
	// through (event.Observer.OutageRidden), the holds they kept, and
	// how long the lease was suspended in each.
	outages, kept metric.Int64Counter
	suspended     metric.Float64Histogram
	// deadlocks: deadlocks between lock sets broken by a set of this
	// process giving up its wait (event.Observer.DeadlockBroken).
	deadlocks metric.Int64Counter
	waiting   metric.Int64Gauge
	ages      *holdAges
}

// newInstruments makes Observer's instruments on meter (keys: WithKeys). Units are UCUM, as
// the semantic conventions want: seconds, and for counts an annotation in
// braces naming what is counted.
func newInstruments(meter metric.Meter, keys bool) (*instruments, error) {
	i := instruments{keys: keys, ages: newHoldAges(time.Now, keys)}
	var errs []error
	hist := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	i.acquire = hist("dsync.acquire.duration", "How long a call that asked for a hold took.", holdBuckets)
	i.hold = hist("dsync.hold.duration", "How long holds lasted.", holdBuckets)
	i.renewal = hist("dsync.lease.renewal.duration", "Round trips of the lease's renewals.", leaseBuckets)
	i.headroom = hist("dsync.lease.renewal.headroom", "Time the lease had left when a renewal was confirmed.", leaseBuckets)
	i.lost = counter("dsync.hold.lost", "{hold}", "Holds lost without their caller.")
	i.renewFailed = counter("dsync.lease.renewal.failures", "{renewal}", "Renewals that failed.")
	i.dropped = counter("dsync.observer.dropped", "{event}", "Events the observer fell too far behind to record.")
	i.outages = counter("dsync.lease.outages", "{outage}", "Outages of the whole store the lease rode through: suspended at its deadline, resumed once the store was back.")
	i.kept = counter("dsync.hold.kept", "{hold}", "Holds lost to a suspension in an outage of the whole store whose claims the resume kept, for their owners to take back.")
	i.suspended = hist("dsync.lease.suspension.duration", "How long the lease was suspended in an outage of the whole store it rode through.", holdBuckets)
	i.deadlocks = counter("dsync.lockset.deadlocks", "{deadlock}", "Deadlocks between lock sets that a set of this process broke by giving up its wait, as the youngest set of the cycle.")
	var err error
	i.waiting, err = meter.Int64Gauge("dsync.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Callers of this process waiting for a hold."))
	errs = append(errs, err)
	_, err = meter.Float64ObservableGauge("dsync.hold.age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest hold this process has now."),
		metric.WithFloat64Callback(i.ages.observe))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &i, nil
}

// zeroSeries records 0 in the counters and the gauge for every attribute
// set known in advance, so that their series exist before their first
// event: an alert on failures then reads 0, not an absent series. Keys are
// not known in advance: with WithKeys, the zero series carry none.
func (i *instruments) zeroSeries() {
	ctx := context.Background()
	for _, k := range kinds {
		for _, c := range causes {
			i.lost.Add(ctx, 0, metric.WithAttributes(attrKind.String(string(k)), attrCause.String(c)))
		}
	}
	i.renewFailed.Add(ctx, 0)
	i.dropped.Add(ctx, 0)
	i.outages.Add(ctx, 0)
	i.kept.Add(ctx, 0)
	i.deadlocks.Add(ctx, 0)
	i.waiting.Record(ctx, 0)
}
