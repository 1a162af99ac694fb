package dsyncotel_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	dsyncotel "github.com/go-dsync/dsync/contrib/otel"
	"github.com/go-dsync/dsync/dsync/event"
)

// A deadlock a lock set of the process broke is counted in
// dsync.lockset.deadlocks (the series DsyncDeadlockBroken reads), with
// the key its victim waited at only under WithKeys. dsync/lockset's
// TestDeadlockTwoSets checks that a broken cycle tells the observer.
func TestDeadlockBrokenCounted(t *testing.T) {
	broken := event.Deadlock{Victim: "set-b", Key: "acct/7", Cycle: []event.DeadlockEdge{
		{Set: "set-b", Key: "acct/7", HeldBy: "set-a", Token: 41},
		{Set: "set-a", Key: "acct/9", HeldBy: "set-b"},
	}}
	for _, tc := range []struct {
		name    string
		opts    []dsyncotel.Option
		wantKey string
	}{
		{"without keys", nil, ""},
		{"WithKeys", []dsyncotel.Option{dsyncotel.WithKeys()}, "acct/7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sdkmetric.NewManualReader()
			obs, err := dsyncotel.Observer(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)).Meter("test"), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			obs.DeadlockBroken(broken)
			obs.DeadlockBroken(broken)
			s, ok := collect(t, r)["dsync.lockset.deadlocks"].(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("dsync.lockset.deadlocks is %T, want an int64 sum", collect(t, r)["dsync.lockset.deadlocks"])
			}
			var counted int64
			for _, dp := range s.DataPoints {
				key, hasKey := dp.Attributes.Value("dsync.key")
				if dp.Value == 0 {
					continue // the zero series of the Observer's creation
				}
				if hasKey != (tc.wantKey != "") || key.AsString() != tc.wantKey {
					t.Errorf("a deadlock counted with dsync.key %q (set: %v); want %q", key.AsString(), hasKey, tc.wantKey)
				}
				counted += dp.Value
			}
			if counted != 2 {
				t.Errorf("dsync.lockset.deadlocks counted %d; want the 2 deadlocks broken", counted)
			}
		})
	}
}
