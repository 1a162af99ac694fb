package dsyncotel_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/leader"
)

// metricsOf reads what the reader's meter recorded, by instrument name,
// with the instruments' units.
func metricsOf(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// everyKind are the kinds of holds, one per primitive.
var everyKind = []event.Kind{
	event.KindMutex, event.KindRead, event.KindWrite, event.KindSemaphore,
	event.KindOnce, event.KindElection,
}

// The failure counters and the waiting gauge are at 0 before any event, a
// series per kind and cause where they have them, so that an alert reads
// 0 rather than an absent series.
func TestSeriesAtZeroFromTheStart(t *testing.T) {
	r := sdkmetric.NewManualReader()
	if _, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test")); err != nil {
		t.Fatal(err)
	}
	got := metricsOf(t, r)
	lost, ok := got["dsync.hold.lost"].Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("dsync.hold.lost before any event: %+v, want a series at 0 per kind and cause", got["dsync.hold.lost"])
	}
	var series []string
	for _, dp := range lost.DataPoints {
		k, _ := dp.Attributes.Value("dsync.kind")
		c, _ := dp.Attributes.Value("dsync.lost.cause")
		series = append(series, k.AsString()+"/"+c.AsString())
		if dp.Value != 0 {
			t.Errorf("dsync.hold.lost{%s, %s} = %d before any event", k.AsString(), c.AsString(), dp.Value)
		}
	}
	for _, k := range everyKind {
		for _, c := range []string{"lease", "revoked", "stalled", "closed"} {
			if !slices.Contains(series, string(k)+"/"+c) {
				t.Errorf("dsync.hold.lost has no series of kind %s and cause %s before its first event (has %v)", k, c, series)
			}
		}
	}
	for _, name := range []string{"dsync.lease.renewal.failures", "dsync.observer.dropped", "dsync.lockset.deadlocks"} {
		s, ok := got[name].Data.(metricdata.Sum[int64])
		if !ok || len(s.DataPoints) != 1 || s.DataPoints[0].Value != 0 {
			t.Errorf("%s before any event: %+v, want one series at 0", name, got[name])
		}
	}
	if g, ok := got["dsync.waiting"].Data.(metricdata.Gauge[int64]); !ok || len(g.DataPoints) != 1 || g.DataPoints[0].Value != 0 {
		t.Errorf("dsync.waiting before any event: %+v, want 0", got["dsync.waiting"])
	}
}

// Every instrument has a unit in the semantic conventions' style (seconds,
// or an annotation naming what is counted), and the second-unit
// histograms have buckets for lock latencies, from a millisecond to tens
// of seconds, rather than the SDK's default (0, 5, 10, ... 10000), which
// puts every one of them in the first bucket.
func TestUnitsAndBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := sdkmetric.NewManualReader()
		meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test")
		obs, err := dsyncotel.Observer(meter)
		if err != nil {
			t.Fatal(err)
		}
		transitions, err := dsyncotel.LeaderObserver(meter)
		if err != nil {
			t.Fatal(err)
		}
		b := memClient(t, dsync.ClientWithObserver(obs), dsync.ClientWithTTL(3*time.Second)) // renewed every second
		m, _ := dsync.NewMutex(b, "k")
		m.Lock()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		m.Unlock()
		e, err := leader.NewElection(b, "jobs", leader.WithObserver(transitions))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		b.Close() // delivers what is queued

		got := metricsOf(t, r)
		units := map[string]string{
			"dsync.acquire.duration":       "s",
			"dsync.hold.duration":          "s",
			"dsync.lease.renewal.duration": "s",
			"dsync.lease.renewal.headroom": "s",
			"dsync.hold.lost":              "{hold}",
			"dsync.lease.renewal.failures": "{renewal}",
			"dsync.observer.dropped":       "{event}",
			"dsync.waiting":                "{call}",
			"dsync.leader.transitions":     "{transition}",
		}
		for name, unit := range units {
			m, ok := got[name]
			if !ok {
				t.Errorf("%s: not recorded", name)
				continue
			}
			if m.Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
			}
		}
		for _, name := range []string{"dsync.acquire.duration", "dsync.hold.duration", "dsync.lease.renewal.duration", "dsync.lease.renewal.headroom"} {
			h, ok := got[name].Data.(metricdata.Histogram[float64])
			if !ok || len(h.DataPoints) == 0 {
				t.Errorf("%s: no histogram recorded: %+v", name, got[name])
				continue
			}
			bounds := h.DataPoints[0].Bounds
			for i := 1; i < len(bounds); i++ {
				if bounds[i] <= bounds[i-1] {
					t.Errorf("%s: bounds %v not increasing", name, bounds)
				}
			}
			// At least two boundaries in each decade from 1 ms to 100 s:
			// a 2 ms round trip, a 50 ms one and a 5 s wait are told apart.
			for lo := 0.001; lo < 100; lo *= 10 {
				n := 0
				for _, b := range bounds {
					if b >= lo && b < lo*10 {
						n++
					}
				}
				if n < 2 {
					t.Errorf("%s: bounds %v: %d in [%g, %g) s, want at least 2", name, bounds, n, lo, lo*10)
				}
			}
		}
		// The Mutex's 2.5 s hold, on synctest's clock, is above the
		// buckets of fast holds.
		h := got["dsync.hold.duration"].Data.(metricdata.Histogram[float64])
		for _, dp := range h.DataPoints {
			if k, _ := dp.Attributes.Value("dsync.kind"); k.AsString() != string(event.KindMutex) {
				continue
			}
			for i, c := range dp.BucketCounts {
				if c != 0 && i < len(dp.Bounds) && dp.Bounds[i] < 2.5 {
					t.Errorf("a 2.5 s hold counted in the bucket up to %g s", dp.Bounds[i])
				}
			}
		}
	})
}

// Each primitive's holds carry a kind of their own: an election's lease is
// not counted with the Mutexes of the same name.
func TestKindPerPrimitive(t *testing.T) {
	r := sdkmetric.NewManualReader()
	obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	b := memClient(t, dsync.ClientWithObserver(obs))
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := dsync.NewMutex(b, "jobs")
	must(err)
	m.Lock()
	//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
	m.Unlock()
	rw, err := dsync.NewRWMutex(b, "jobs")
	must(err)
	rw.RLock()
	//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
	rw.RUnlock()
	rw.Lock()
	//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
	rw.Unlock()
	s, err := dsync.NewSemaphore(b, "jobs", 2)
	must(err)
	must(s.Acquire(ctx, 1))
	s.Release(1)
	o, err := dsync.NewOnce(b, "jobs")
	must(err)
	must(o.Do(ctx, func(context.Context) error { return nil }))
	e, err := leader.NewElection(b, "jobs")
	must(err)
	_, err = e.Campaign(ctx)
	must(err)
	must(e.Resign(ctx))
	must(e.Close())
	b.Close() // delivers what is queued

	got := metricsOf(t, r)
	for _, name := range []string{"dsync.acquire.duration", "dsync.hold.duration"} {
		counts := map[string]uint64{}
		h, ok := got[name].Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s: %+v", name, got[name])
		}
		for _, dp := range h.DataPoints {
			k, _ := dp.Attributes.Value(attribute.Key("dsync.kind"))
			counts[k.AsString()] += dp.Count
		}
		for _, k := range everyKind {
			if counts[string(k)] != 1 {
				t.Errorf("%s: %d of kind %s, want 1 (all: %v)", name, counts[string(k)], k, counts)
			}
		}
	}
}
