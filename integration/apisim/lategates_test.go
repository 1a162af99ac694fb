package apisim

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A request of gates sent before an emptying whose gates land after it is
// recorded as a fault of their key (which then waits up to three bucket
// spans), so that the partition's liveness is not judged over it; one
// that lands before the emptying, or whose gates did not land, is not.
func TestLateGatesAreFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gates := []driver.Doc{{Kind: driver.KindGate, Key: "k"}}
		for _, tc := range []struct {
			name          string
			emptyBetween  bool
			landed, fault bool
		}{
			{"landed after an emptying", true, true, true},
			{"refused after an emptying", true, false, false},
			{"no emptying", false, true, false},
		} {
			w := newWorld(1)
			apply := w.lateGates(gates, 4*time.Second, func() bool { return tc.landed }, func(plan) {})
			time.Sleep(time.Millisecond)
			if tc.emptyBetween {
				w.hist.Emptyings = append(w.hist.Emptyings, time.Now())
			}
			time.Sleep(time.Millisecond)
			apply(plan{})
			faults := 0
			for _, pf := range w.hist.ProcFaults {
				if strings.HasPrefix(pf.Kind, stalledGates+"k ") {
					faults++
				}
			}
			if got := faults == 1; got != tc.fault || faults > 1 {
				t.Errorf("%s: %d faults recorded, want fault %v", tc.name, faults, tc.fault)
			}
		}
	})
}
