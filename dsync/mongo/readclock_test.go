package dsyncmongo

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestServerTimeNeverFromReads: PrepareRead's clock (hello; behind a
// mongos the router's) serves ReadServerTime and ServerNowRead only, never
// ServerTime, which the engine judges expiry with: after PrepareRead alone
// ServerTime is the zero Interval (not valid, as driver.Store says before
// Prepare), and after Prepare it is Prepare's estimate, PrepareRead's
// retired. Before the review ServerTime answered from hello until
// Prepare, so an engine that judged before Prepare judged by it.
func TestServerTimeNeverFromReads(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	s, err := NewStore(mongotest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Roles().Reads.PrepareRead(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.ServerTime(); got != (driver.Interval{}) {
		t.Errorf("ServerTime after PrepareRead alone = %+v, want the zero Interval", got)
	}
	if got := s.Roles().Reads.ReadServerTime(); got.Earliest.IsZero() || got.Latest.Before(got.Earliest) {
		t.Errorf("ReadServerTime after PrepareRead = %+v, want a sample", got)
	}
	if got, err := s.ServerNowRead(ctx); err != nil || got.Earliest.IsZero() {
		t.Errorf("ServerNowRead after PrepareRead = %+v, %v; want a sample", got, err)
	}

	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if s.clock.readEst.Load() != nil {
		t.Error("PrepareRead's estimator outlived Prepare's")
	}
	w, r := s.ServerTime(), s.Roles().Reads.ReadServerTime()
	if w.Earliest.IsZero() || r.Earliest.IsZero() {
		t.Errorf("after Prepare: ServerTime %+v, ReadServerTime %+v; want both sampled", w, r)
	}
}
