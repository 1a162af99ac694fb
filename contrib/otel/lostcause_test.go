package dsyncotel_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/event"
)

// kindCause is a dsync.hold.lost series without keys.
type kindCause struct{ kind, cause string }

// lostCounts returns dsync.hold.lost's points, by kind and cause.
func lostCounts(t *testing.T, r *sdkmetric.ManualReader) map[kindCause]int64 {
	t.Helper()
	s, ok := collect(t, r)["dsync.hold.lost"].(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("dsync.hold.lost: no int64 sum recorded")
	}
	out := map[kindCause]int64{}
	for _, dp := range s.DataPoints {
		k, _ := dp.Attributes.Value("dsync.kind")
		c, _ := dp.Attributes.Value("dsync.lost.cause")
		out[kindCause{k.AsString(), c.AsString()}] += dp.Value
	}
	return out
}

// checkLost fails t unless dsync.hold.lost counts one hold of kind
// mutex lost for cause, and none for another cause.
func checkLost(t *testing.T, r *sdkmetric.ManualReader, cause string) {
	t.Helper()
	lost := kindCause{string(event.KindMutex), cause}
	got := lostCounts(t, r)
	if got[lost] != 1 {
		t.Errorf("dsync.hold.lost{dsync.kind=mutex, dsync.lost.cause=%s} = %d, want 1", cause, got[lost])
	}
	for kc, n := range got {
		if kc != lost && n != 0 {
			t.Errorf("dsync.hold.lost{dsync.kind=%s, dsync.lost.cause=%s} = %d, want 0", kc.kind, kc.cause, n)
		}
	}
}

// lostWithin waits for m's Lost() to close, failing t if it does not
// within bound (of the bubble's time).
func lostWithin(t *testing.T, m *dsync.Mutex, bound time.Duration) {
	t.Helper()
	select {
	case <-m.Lost():
	case <-time.After(bound):
		t.Fatalf("the hold was not lost within %v", bound)
	}
}

// A hold whose work reports no progress within its progress deadline is
// counted lost with cause stalled, the series DsyncHoldStalled watches.
func TestLostCauseStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, c := observed(t)
		m, err := dsync.NewMutex(c, "encode", dsync.WithProgressDeadline(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		m.Lock() // and no Progress
		lostWithin(t, m, time.Minute)
		synctest.Wait() // the observer was told
		checkLost(t, r, "stalled")
	})
}

// observedProcess is observed with the Client on a process of a store in
// memory, which a test cuts off (memory.Process.SetReachable), and opts.
func observedProcess(t *testing.T, opts ...dsync.ClientOption) (*sdkmetric.ManualReader, *memory.Process, *dsync.Client) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	proc := memory.New().Process()
	c, err := dsync.NewClient(proc, append([]dsync.ClientOption{dsync.ClientWithObserver(obs)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return r, proc, c
}

// A hold whose lease could not be renewed (its process cut off from the
// store) is counted lost with cause lease without an outage grace, and
// with cause suspended with one (the default): it may be taken back.
func TestLostCauseLease(t *testing.T) {
	for _, tc := range []struct {
		cause string
		opts  []dsync.ClientOption
	}{
		{"lease", []dsync.ClientOption{dsync.ClientWithOutageGrace(0)}},
		{"suspended", nil},
	} {
		t.Run(tc.cause, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, proc, c := observedProcess(t, tc.opts...)
				m, _ := dsync.NewMutex(c, "encode")
				m.Lock()
				proc.SetReachable(false)
				lostWithin(t, m, 2*dsync.DefaultTTL)
				synctest.Wait()
				checkLost(t, r, tc.cause)
			})
		})
	}
}

// An outage of the whole store that a hold rides through is counted:
// dsync.lease.outages and dsync.hold.kept go up by one, and
// dsync.lease.suspension.duration records how long the lease was
// suspended. The only process cut off is the whole store's outage.
func TestOutageRiddenCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, proc, c := observedProcess(t)
		m, _ := dsync.NewMutex(c, "encode")
		m.Lock()
		proc.SetReachable(false)
		lostWithin(t, m, 2*dsync.DefaultTTL)
		time.Sleep(10 * time.Second)
		proc.SetReachable(true)
		if err := m.LockContext(context.Background()); err != nil {
			t.Fatalf("LockContext after the outage: %v; want the hold back", err)
		}
		synctest.Wait()
		got := metricsOf(t, r)
		for name, want := range map[string]int64{"dsync.lease.outages": 1, "dsync.hold.kept": 1} {
			sum, ok := got[name].Data.(metricdata.Sum[int64])
			if !ok || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != want {
				t.Errorf("%s = %+v, want %d", name, got[name].Data, want)
			}
		}
		h, ok := got["dsync.lease.suspension.duration"].Data.(metricdata.Histogram[float64])
		// Suspended from Lost's closing to the resume: the 10 s cut off,
		// and then up to a TTL until a renewal's retry and the check.
		if !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum < 10 || h.DataPoints[0].Sum > 10+dsync.DefaultTTL.Seconds() {
			t.Errorf("dsync.lease.suspension.duration = %+v, want one suspension of 10 s to 10 s + a TTL", got["dsync.lease.suspension.duration"].Data)
		}
		m.Unlock()
	})
}

// A hold still held when its Client is closed is counted lost with
// cause closed: the program ended it, which an alert on lost holds
// should tell apart.
func TestLostCauseClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, c := observed(t)
		m, _ := dsync.NewMutex(c, "encode")
		m.Lock()
		if err := c.Close(); err != nil { // delivers what is queued
			t.Fatal(err)
		}
		checkLost(t, r, "closed")
	})
}

// The cause is read from the error Observer.Lost is given, wrapped as
// dsync wraps it.
func TestLostCauseOfEachError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		cause string
	}{
		{"deadline", fmt.Errorf("%w (key %q)", dsync.ErrLost, "k"), "lease"},
		{"session gone", fmt.Errorf("%w: %w (key %q)", dsync.ErrLost, dsync.ErrSessionGone, "k"), "lease"},
		{"revoked", fmt.Errorf("%w: %w (key %q)", dsync.ErrLost, dsync.ErrRevoked, "k"), "revoked"},
		{"stalled", fmt.Errorf("%w: %w (key %q)", dsync.ErrLost, dsync.ErrStalled, "k"), "stalled"},
		{"closed", fmt.Errorf("%w: %w (key %q)", dsync.ErrLost, dsync.ErrClosed, "k"), "closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sdkmetric.NewManualReader()
			obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"))
			if err != nil {
				t.Fatal(err)
			}
			obs.Lost(event.Held{Key: "k", Kind: event.KindMutex, Token: 1, Held: time.Second}, tc.err)
			checkLost(t, r, tc.cause)
		})
	}
}

// With WithKeys, a lost hold's series carries its key beside its cause.
func TestLostCauseWithKeys(t *testing.T) {
	r := sdkmetric.NewManualReader()
	obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"), dsyncotel.WithKeys())
	if err != nil {
		t.Fatal(err)
	}
	obs.Lost(event.Held{Key: "encode", Kind: event.KindSemaphore}, fmt.Errorf("%w: %w", dsync.ErrLost, dsync.ErrStalled))
	s := collect(t, r)["dsync.hold.lost"].(metricdata.Sum[int64])
	found := false
	for _, dp := range s.DataPoints {
		k, _ := dp.Attributes.Value("dsync.key")
		c, _ := dp.Attributes.Value("dsync.lost.cause")
		if k.AsString() == "encode" {
			found = true
			if c.AsString() != "stalled" || dp.Value != 1 {
				t.Errorf("dsync.hold.lost of key encode: cause %q, %d, want stalled, 1", c.AsString(), dp.Value)
			}
		}
	}
	if !found {
		t.Errorf("no dsync.hold.lost series of key encode: %+v", s.DataPoints)
	}
}
