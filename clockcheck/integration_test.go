package clockcheck_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// shiftedClock is the system clock with the wall clock moved by shift.
type shiftedClock struct{ shift time.Duration }

func (c shiftedClock) Wall() time.Time { return clockcheck.SystemClock().Wall().Add(c.shift) }

func (c shiftedClock) Monotonic() time.Duration { return clockcheck.SystemClock().Monotonic() }

// serverLocalTime reads the server's clock directly.
func serverLocalTime(ctx context.Context, db *mongo.Database) (time.Time, error) {
	var reply struct {
		LocalTime time.Time `bson:"localTime"`
	}
	err := db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&reply)
	return reply.LocalTime, err
}

// sameHostClock reports whether the test server reads this machine's clock
// (an embedded FerretDB or a local container), so that the true offset of
// the system clock is zero.
func sameHostClock(t *testing.T) bool {
	return mongotest.Shared(t).Kind() != mongotest.KindURI
}

func TestIntegrationClockAnHourAhead(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ahead := clockcheck.WithClock(shiftedClock{time.Hour})

	base, err := clockcheck.Measure(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	s, err := clockcheck.Measure(ctx, db, ahead)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("system clock: offset %v ±%v (RTT %v); an hour ahead: offset %v ±%v (RTT %v)",
		base.Offset, base.Uncertainty, base.RTT, s.Offset, s.Uncertainty, s.RTT)

	if sameHostClock(t) {
		if d := s.Offset + time.Hour; d < -s.Uncertainty || d > s.Uncertainty {
			t.Errorf("offset %v is %v from −1h, more than its uncertainty %v", s.Offset, d, s.Uncertainty)
		}
		if d := base.Offset; d < -base.Uncertainty || d > base.Uncertainty {
			t.Errorf("system clock offset %v from a server on this host, more than its uncertainty %v", d, base.Uncertainty)
		}
	}
	// Whatever the server's own offset, shifting the wall clock by an hour
	// shifts the measured offset by an hour.
	if d, u := s.Offset-(base.Offset-time.Hour), s.Uncertainty+base.Uncertainty; d < -u || d > u {
		t.Errorf("offset an hour ahead %v, with the system clock %v: differ by %v from an hour, more than the uncertainties %v",
			s.Offset, base.Offset, d, u)
	}

	// Check refuses the clock an hour ahead, and accepts this machine's.
	_, err = clockcheck.Check(ctx, db, clockcheck.DefaultMaxOffset, ahead)
	var oe *clockcheck.OffsetError
	if !errors.As(err, &oe) || oe.Offset > -time.Hour+oe.Uncertainty+time.Second || oe.Limit != clockcheck.DefaultMaxOffset {
		t.Errorf("Check an hour ahead: %v, want an *OffsetError of about −1h", err)
	}
	if sameHostClock(t) {
		if _, err := clockcheck.Check(ctx, db, clockcheck.DefaultMaxOffset); err != nil {
			t.Errorf("Check with the system clock: %v", err)
		}
	}
}

func TestIntegrationEstimator(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// Re-sample often, so that replacements happen during the test.
	est, err := clockcheck.NewEstimator(ctx, db,
		clockcheck.WithClock(shiftedClock{time.Hour}), clockcheck.WithInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()

	for range 20 {
		before := est.Now()
		lt, err := serverLocalTime(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		after := est.Now()
		// The server read its clock, truncated to lt, between the two
		// estimates.
		if lt.Add(time.Millisecond).Before(before.Earliest) || lt.After(after.Latest) {
			t.Errorf("server localTime %v outside [%v, %v]",
				lt.Format(time.RFC3339Nano), before.Earliest.Format(time.RFC3339Nano), after.Latest.Format(time.RFC3339Nano))
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := est.Sample()
	t.Logf("sample in use: offset %v ±%v, RTT %v", s.Offset, s.Uncertainty, s.RTT)
	if err := est.Close(); err != nil {
		t.Error(err)
	}
}
