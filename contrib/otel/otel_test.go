package dsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
)

// collect reads what the reader's meter recorded, by instrument name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// histCount is how many values a histogram recorded with attribute k=v.
func histCount(t *testing.T, a metricdata.Aggregation, k, v string) uint64 {
	t.Helper()
	h, ok := a.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%T is not a float64 histogram", a)
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if got, ok := dp.Attributes.Value(attribute.Key(k)); ok && got.AsString() == v {
			n += dp.Count
		}
	}
	return n
}

func TestObserver(t *testing.T) {
	r := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test")
	obs, err := dsyncotel.Observer(meter)
	if err != nil {
		t.Fatal(err)
	}
	b := memClient(t, dsync.ClientWithObserver(obs))
	m, _ := dsync.NewMutex(b, "k")
	other, _ := dsync.NewMutex(b, "k")
	m.Lock()
	if other.TryLock() {
		t.Fatal("TryLock of a held key held")
	}
	m.Unlock()
	b.Close() // records what is queued

	got := collect(t, r)
	if n := histCount(t, got["dsync.acquire.duration"], "dsync.outcome", "acquired"); n != 1 {
		t.Errorf("acquired: %d recorded, want 1", n)
	}
	if n := histCount(t, got["dsync.acquire.duration"], "dsync.outcome", "held"); n != 1 {
		t.Errorf("a try that found the key held: %d recorded, want 1", n)
	}
	if n := histCount(t, got["dsync.hold.duration"], "dsync.kind", "mutex"); n != 1 {
		t.Errorf("holds: %d recorded, want 1", n)
	}
	g, ok := got["dsync.waiting"].(metricdata.Gauge[int64])
	if !ok || len(g.DataPoints) != 1 || g.DataPoints[0].Value != 0 {
		t.Errorf("dsync.waiting = %+v, want one point at 0 after the Lock returned", got["dsync.waiting"])
	}
	for _, dp := range got["dsync.acquire.duration"].(metricdata.Histogram[float64]).DataPoints {
		if _, ok := dp.Attributes.Value("dsync.key"); ok {
			t.Error("keys recorded without WithKeys")
		}
	}
}

func TestObserverWithKeys(t *testing.T) {
	r := sdkmetric.NewManualReader()
	obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"), dsyncotel.WithKeys())
	if err != nil {
		t.Fatal(err)
	}
	b := memClient(t, dsync.ClientWithObserver(obs))
	m, _ := dsync.NewMutex(b, "report-2026-11-24")
	m.Lock()
	//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
	m.Unlock()
	b.Close()
	if n := histCount(t, collect(t, r)["dsync.hold.duration"], "dsync.key", "report-2026-11-24"); n != 1 {
		t.Errorf("holds of the key: %d recorded, want 1", n)
	}
}

// The leader gauge is 1 while leading and 0 after, under client-go's name
// and attribute.
func TestLeaderObserver(t *testing.T) {
	r := sdkmetric.NewManualReader()
	f, err := dsyncotel.LeaderObserver(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := leader.NewElection(memClient(t), "billing", leader.WithObserver(f))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	status := func() int64 {
		t.Helper()
		g, ok := collect(t, r)["leader_election_master_status"].(metricdata.Gauge[int64])
		if !ok || len(g.DataPoints) != 1 {
			t.Fatalf("leader_election_master_status: %+v", g)
		}
		if v, _ := g.DataPoints[0].Attributes.Value("name"); v.AsString() != "billing" {
			t.Errorf("attribute name = %q", v.AsString())
		}
		return g.DataPoints[0].Value
	}
	// The observer runs on a goroutine of the election's: Close delivers
	// what is queued before it returns.
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if v := status(); v != 0 {
		t.Errorf("gauge after resigning = %d, want 0", v)
	}
	s, ok := collect(t, r)["dsync.leader.transitions"].(metricdata.Sum[int64])
	if !ok || len(s.DataPoints) != 2 {
		t.Fatalf("transitions: %+v, want a point for each direction", s)
	}
	for _, dp := range s.DataPoints {
		if dp.Value != 1 {
			t.Errorf("transitions %v = %d, want 1", dp.Attributes, dp.Value)
		}
	}
}

func TestNilMeter(t *testing.T) {
	if _, err := dsyncotel.Observer(nil); err == nil {
		t.Error("Observer(nil) succeeded")
	}
	if _, err := dsyncotel.LeaderObserver(nil); err == nil {
		t.Error("LeaderObserver(nil) succeeded")
	}
}

// memClient returns a Client on a store of its own in memory, closed
// when the test ends (again: Close is idempotent).
func memClient(t *testing.T, opts ...dsync.ClientOption) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(memory.New(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
