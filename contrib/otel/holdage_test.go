package dsyncotel_test

import (
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// ages returns dsync.hold.age's points, by the value of attribute k.
func ages(t *testing.T, r *sdkmetric.ManualReader, k string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	a, ok := collect(t, r)["dsync.hold.age"]
	if !ok {
		return out
	}
	g, ok := a.(metricdata.Gauge[float64])
	if !ok {
		t.Fatalf("dsync.hold.age is a %T, want a float64 gauge", a)
	}
	for _, dp := range g.DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(k))
		out[v.AsString()] = dp.Value
	}
	return out
}

// observed returns a Client of the in-memory store whose Observer records
// with opts on the returned reader's meter; it is closed when t ends.
func observed(t *testing.T, opts ...dsyncotel.Option) (*sdkmetric.ManualReader, *dsync.Client) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dsync.NewClient(memory.New(), dsync.ClientWithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return r, c
}

// dsync.hold.age is the age of the oldest hold held now, while it is
// held: what an alert on a key held too long reads (the hold's duration
// is only recorded when it ends).
func TestHoldAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, c := observed(t, dsyncotel.WithKeys())
		if got := ages(t, r, "dsync.key"); len(got) != 0 {
			t.Errorf("before any hold: %v, want no point", got)
		}
		old, _ := dsync.NewMutex(c, "nightly")
		old.Lock()
		time.Sleep(90 * time.Minute)
		sem, _ := dsync.NewSemaphore(c, "workers", 3)
		if err := sem.Acquire(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait() // the observer was told
		got := ages(t, r, "dsync.key")
		if got["nightly"] != (91 * time.Minute).Seconds() {
			t.Errorf("the Mutex held for 91 minutes: age %v s, want %v", got["nightly"], (91 * time.Minute).Seconds())
		}
		if got["workers"] != time.Minute.Seconds() {
			t.Errorf("the Semaphore unit held for a minute: age %v s, want 60", got["workers"])
		}
		old.Unlock()
		synctest.Wait()
		got = ages(t, r, "dsync.key")
		if _, ok := got["nightly"]; ok {
			t.Errorf("after Unlock: %v, want no point for the released key", got)
		}
		if got["workers"] != time.Minute.Seconds() {
			t.Errorf("the Semaphore unit still held: age %v s, want 60", got["workers"])
		}
		sem.Release(1)
		synctest.Wait()
		if got := ages(t, r, "dsync.key"); len(got) != 0 {
			t.Errorf("nothing held: %v, want no point", got)
		}
	})
}

// Without WithKeys, the age is the oldest hold's of each kind.
func TestHoldAgeByKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, c := observed(t)
		a, _ := dsync.NewMutex(c, "a")
		b, _ := dsync.NewMutex(c, "b")
		a.Lock()
		time.Sleep(time.Hour)
		b.Lock()
		time.Sleep(time.Minute)
		synctest.Wait()
		got := ages(t, r, "dsync.kind")
		if len(got) != 1 || got["mutex"] != (61*time.Minute).Seconds() {
			t.Errorf("two Mutexes held 61 and 1 minutes: %v, want the oldest only, mutex=3660", got)
		}
		a.Unlock()
		b.Unlock()
	})
}
