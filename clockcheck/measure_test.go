package clockcheck

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func mustConfig(t *testing.T, opts ...Option) *config {
	t.Helper()
	cfg, err := newConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkOffset checks that the sample's offset is within its uncertainty of
// the true offset between the server and the local wall clock.
func checkOffset(t *testing.T, s Sample, want time.Duration) {
	t.Helper()
	if got := abs(s.Offset - want); got > s.Uncertainty {
		t.Errorf("Offset = %v, true offset %v: off by %v, more than Uncertainty %v", s.Offset, want, got, s.Uncertainty)
	}
}

func TestMeasureOffsetWithinUncertainty(t *testing.T) {
	for _, skew := range []time.Duration{-time.Hour, 0, time.Hour} {
		for _, rtt := range []time.Duration{0, time.Millisecond, 7 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
			for _, up := range []float64{0.5, 0, 1} {
				synctest.Test(t, func(t *testing.T) {
					w := newWorld()
					w.wallSkew = skew
					w.legs = fixedLegs(rtt, up)
					want := w.trueOffset()
					s, err := measure(t.Context(), w, mustConfig(t, WithClock(w)))
					if err != nil {
						t.Fatal(err)
					}
					if s.RTT != rtt {
						t.Errorf("RTT = %v, want %v", s.RTT, rtt)
					}
					if wantU := rtt - rtt/2 + time.Millisecond; s.Uncertainty != wantU {
						t.Errorf("Uncertainty = %v, want %v", s.Uncertainty, wantU)
					}
					checkOffset(t, s, want)
					if got := s.TakenWall.Add(s.Offset); !got.Equal(s.ServerTime) {
						t.Errorf("TakenWall + Offset = %v, want ServerTime %v", got, s.ServerTime)
					}
				})
			}
		}
	}
}

func TestMeasureKeepsSmallestRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rtts := []time.Duration{50, 10, 30, 5, 40}
		w := newWorld()
		w.wallSkew = -time.Hour
		w.legs = func(i int) (time.Duration, time.Duration) {
			// All of the delay on the way back: the worst case for
			// the midpoint.
			return 0, rtts[i] * time.Millisecond
		}
		want := w.trueOffset()
		s, err := measure(t.Context(), w, mustConfig(t, WithClock(w), WithSamples(len(rtts))))
		if err != nil {
			t.Fatal(err)
		}
		if s.RTT != 5*time.Millisecond {
			t.Errorf("RTT = %v, want the smallest, 5ms", s.RTT)
		}
		if n := w.callCount(); n != len(rtts) {
			t.Errorf("%d hello calls, want %d", n, len(rtts))
		}
		checkOffset(t, s, want)
	})
}

func TestMeasureWallJumpDuringRoundTrip(t *testing.T) {
	// The offset describes the wall clock as it is after the reply.
	for _, jump := range []time.Duration{3 * time.Hour, -5 * time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			w.legs = fixedLegs(80*time.Millisecond, 0.5)
			w.jumpInFlight = jump
			s, err := measure(t.Context(), w, mustConfig(t, WithClock(w), WithSamples(1)))
			if err != nil {
				t.Fatal(err)
			}
			checkOffset(t, s, w.trueOffset())
		})
	}
}

func TestCheck(t *testing.T) {
	// The server's clock is on the millisecond and the delay symmetric, so
	// the measured offset is exact: the skew. Uncertainty is 101ms.
	const rtt = 200 * time.Millisecond
	for _, tc := range []struct {
		name    string
		skew    time.Duration // local wall − server
		wantErr bool
		wantMsg string
	}{
		{"in sync", 0, false, ""},
		{"an hour ahead", time.Hour, true, "clockcheck: local clock is 1h0m0s (±101ms) ahead of the server's, more than the limit of 500ms"},
		{"an hour behind", -time.Hour, true, "clockcheck: local clock is 1h0m0s (±101ms) behind the server's, more than the limit of 500ms"},
		{"within the limit", -400 * time.Millisecond, false, ""},
		{"beyond the limit by less than the uncertainty", -600 * time.Millisecond, false, ""},
		{"at the limit plus the uncertainty", 601 * time.Millisecond, false, ""},
		{"certainly beyond the limit", 602 * time.Millisecond, true, "clockcheck: local clock is 602ms (±101ms) ahead of the server's, more than the limit of 500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				w.serverStart = w.origin
				w.wallSkew = tc.skew
				w.legs = fixedLegs(rtt, 0.5)
				s, err := check(t.Context(), w, DefaultMaxOffset, mustConfig(t, WithClock(w)))
				if s.Offset != -tc.skew || s.Uncertainty != 101*time.Millisecond {
					t.Fatalf("sample %+v, want Offset %v, Uncertainty 101ms", s, -tc.skew)
				}
				var oe *OffsetError
				if !tc.wantErr {
					if err != nil {
						t.Fatalf("Check: %v, want nil", err)
					}
					return
				}
				if !errors.As(err, &oe) {
					t.Fatalf("Check: %v, want an *OffsetError", err)
				}
				want := OffsetError{Offset: s.Offset, Uncertainty: s.Uncertainty, Limit: DefaultMaxOffset}
				if *oe != want {
					t.Errorf("OffsetError %+v, want %+v", *oe, want)
				}
				if err.Error() != tc.wantMsg {
					t.Errorf("Error() = %q\nwant       %q", err, tc.wantMsg)
				}
			})
		})
	}
}

func TestCheckNegativeLimit(t *testing.T) {
	w := newWorld()
	if _, err := check(t.Context(), w, -time.Second, mustConfig(t, WithClock(w))); err == nil {
		t.Error("Check with a negative maxOffset: nil error")
	}
}

func TestNilDatabase(t *testing.T) {
	ctx := t.Context()
	_, err1 := Measure(ctx, nil)
	_, err2 := Check(ctx, nil, DefaultMaxOffset)
	e, err3 := NewEstimator(ctx, nil)
	for i, err := range []error{err1, err2, err3} {
		if !errors.Is(err, ErrNilDatabase) || err.Error() != "clockcheck: nil database" {
			t.Errorf("call %d: %v, want ErrNilDatabase", i, err)
		}
	}
	if e != nil {
		t.Error("NewEstimator(nil) returned an Estimator")
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"WithClock(nil)", WithClock(nil)},
		{"WithSamples(0)", WithSamples(0)},
		{"WithSamples(-1)", WithSamples(-1)},
		{"WithInterval(0s)", WithInterval(0)},
		{"WithInterval(-1s)", WithInterval(-time.Second)},
		{"WithMaxDrift(-1e-06)", WithMaxDrift(-1e-6)},
		{"WithMaxDrift(0.1)", WithMaxDrift(0.1)},
		{"WithMaxDrift(NaN)", WithMaxDrift(math.NaN())},
		{"WithLogger(nil)", WithLogger(nil)},
		{"WithProbe(nil)", WithProbe(nil)},
		{"WithMemberSkew(-1s)", WithMemberSkew(-time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newConfig([]Option{tc.opt})
			if err == nil || !strings.HasPrefix(err.Error(), "clockcheck: invalid option: "+tc.name) {
				t.Errorf("error %v, want one naming %s", err, tc.name)
			}
		})
	}
	// Through the public functions, with a database that is never used.
	db := unreachableDatabase(t)
	bad := WithSamples(0)
	_, err1 := Measure(t.Context(), db, bad)
	_, err2 := Check(t.Context(), db, DefaultMaxOffset, bad)
	_, err3 := NewEstimator(t.Context(), db, bad)
	for i, err := range []error{err1, err2, err3} {
		if err == nil || !strings.Contains(err.Error(), "invalid option") {
			t.Errorf("call %d: %v, want an invalid option error", i, err)
		}
	}
	// A nil Option is refused too.
	if _, err := newConfig([]Option{WithSamples(1), nil}); err == nil || err.Error() != "clockcheck: nil option" {
		t.Errorf("a nil option: %v, want clockcheck: nil option", err)
	}
	// Valid edge values.
	if _, err := newConfig([]Option{WithMaxDrift(0), WithSamples(1), WithInterval(1), WithMemberSkew(0)}); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// unreachableDatabase returns a database on a loopback port nothing listens on.
func unreachableDatabase(t *testing.T) *mongo.Database {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).SetDirect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := client.Disconnect(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return client.Database("test")
}

func TestUnreachableServer(t *testing.T) {
	db := unreachableDatabase(t)

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := Measure(ctx, db)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "clockcheck: hello: ") {
			t.Errorf("Measure: %v, want a clockcheck: hello: error wrapping context.DeadlineExceeded", err)
		}
	})
	t.Run("cause", func(t *testing.T) {
		errGiveUp := errors.New("giving up")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(200*time.Millisecond, func() { cancel(errGiveUp) })
		_, err := NewEstimator(ctx, db)
		if !errors.Is(err, errGiveUp) {
			t.Errorf("NewEstimator: %v, want it to wrap the context's cause", err)
		}
	})
}

func TestContextEndedBeforeMeasuring(t *testing.T) {
	errCause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errCause)
	w := newWorld()
	_, err := measure(ctx, w, mustConfig(t, WithClock(w)))
	if !errors.Is(err, errCause) || !strings.HasPrefix(err.Error(), "clockcheck: hello: ") {
		t.Errorf("measure: %v, want it to wrap the cause", err)
	}
	if n := w.callCount(); n != 0 {
		t.Errorf("%d hello calls after the context ended", n)
	}
}

func TestServerErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.noLocalTime = true
		_, err := measure(t.Context(), w, mustConfig(t, WithClock(w)))
		if !errors.Is(err, ErrNoLocalTime) || err.Error() != ErrNoLocalTime.Error() {
			t.Errorf("no localTime: %v, want ErrNoLocalTime", err)
		}

		w = newWorld()
		w.fail = func(i int) error {
			if i == 2 {
				return errServerDown
			}
			return nil
		}
		_, err = measure(t.Context(), w, mustConfig(t, WithClock(w)))
		if !errors.Is(err, errServerDown) || err.Error() != "clockcheck: hello: server down" {
			t.Errorf("failing server: %v, want clockcheck: hello: server down", err)
		}
	})
}

func TestLocalTimeFromReply(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.UTC)
	for _, tc := range []struct {
		name  string
		reply bson.D
		want  time.Time
		msg   string
	}{
		{"date", bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "localTime", Value: bson.NewDateTimeFromTime(at)}, {Key: "ok", Value: 1.0}}, at, ""},
		{"missing", bson.D{{Key: "ok", Value: 1.0}}, time.Time{}, "clockcheck: hello reply has no localTime date"},
		{"a string", bson.D{{Key: "localTime", Value: "2024-05-06"}}, time.Time{}, "clockcheck: hello reply has no localTime date (it is a BSON string)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := bson.Marshal(tc.reply)
			if err != nil {
				t.Fatal(err)
			}
			got, err := localTime(raw)
			if tc.msg != "" {
				if !errors.Is(err, ErrNoLocalTime) || err.Error() != tc.msg {
					t.Errorf("error %v, want %q", err, tc.msg)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("localTime = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

type backwardsClock struct{ n time.Duration }

func (c *backwardsClock) Wall() time.Time { return time.Now() }
func (c *backwardsClock) Monotonic() time.Duration {
	c.n -= time.Second
	return c.n
}

func TestMonotonicGoingBackwards(t *testing.T) {
	w := newWorld()
	_, err := measure(t.Context(), w, mustConfig(t, WithClock(&backwardsClock{})))
	if err == nil || !strings.Contains(err.Error(), "monotonic clock went backwards") {
		t.Errorf("measure: %v, want an error", err)
	}
}

func TestSystemClock(t *testing.T) {
	c := SystemClock()
	m0 := c.Monotonic()
	w := c.Wall()
	m1 := c.Monotonic()
	if m1 < m0 {
		t.Errorf("Monotonic went from %v to %v", m0, m1)
	}
	if strings.Contains(w.String(), "m=") {
		t.Errorf("Wall() = %v carries a monotonic reading", w)
	}
	if d := time.Since(w); d < 0 || d > time.Minute {
		t.Errorf("Wall() = %v, %v from time.Now", w, d)
	}
}

// TestHelloFallsBackToIsMaster: hello that fails on the server, whatever
// the code, or answers without localTime, is followed by isMaster; a
// failure to reach the server is not; and when neither command tells the
// time, the error says so, with both reasons.
func TestHelloFallsBackToIsMaster(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	withTime, err := bson.Marshal(bson.D{{Key: "localTime", Value: bson.NewDateTimeFromTime(at)}, {Key: "ok", Value: 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	noTime, err := bson.Marshal(bson.D{{Key: "ok", Value: 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	notFound := mongo.CommandError{Code: 59, Name: "CommandNotFound", Message: "no such command: 'hello'"}
	strict := mongo.CommandError{Code: 323, Name: "APIStrictError", Message: "Provided apiStrict:true, but the command isMaster is not in API Version 1"}
	refused := mongo.CommandError{Code: 13, Name: "Unauthorized", Message: "command hello requires authentication"}
	unreachable := errors.New("connection refused")
	type answer struct {
		reply bson.Raw
		err   error
	}
	for _, tc := range []struct {
		name            string
		hello, isMaster answer
		wantCalls       []string
		wantErr         []error  // errors.Is targets; none: success
		wantMsg         []string // substrings of the error
	}{
		{"hello answers", answer{reply: withTime}, answer{}, []string{"hello"}, nil, nil},
		{"hello unknown", answer{err: notFound}, answer{reply: withTime}, []string{"hello", "isMaster"}, nil, nil},
		{"hello refused with another code", answer{err: refused}, answer{reply: withTime}, []string{"hello", "isMaster"}, nil, nil},
		{"hello without localTime", answer{reply: noTime}, answer{reply: withTime}, []string{"hello", "isMaster"}, nil, nil},
		{"server unreachable", answer{err: unreachable}, answer{reply: withTime}, []string{"hello"}, []error{unreachable}, nil},
		{"neither command known", answer{err: notFound}, answer{err: strict}, []string{"hello", "isMaster"},
			[]error{ErrNoLocalTime},
			[]string{"clockcheck: the server reports no time: neither hello nor isMaster", "hello: (CommandNotFound)", "isMaster: (APIStrictError)"}},
		{"neither reply has localTime", answer{reply: noTime}, answer{reply: noTime}, []string{"hello", "isMaster"},
			[]error{ErrNoLocalTime}, []string{"neither hello nor isMaster answered with a localTime date"}},
		{"isMaster unreachable", answer{err: notFound}, answer{err: unreachable}, []string{"hello", "isMaster"}, []error{unreachable}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			got, err := helloTime(t.Context(), func(_ context.Context, cmd bson.D) (bson.Raw, error) {
				calls = append(calls, cmd[0].Key)
				a := tc.hello
				if cmd[0].Key == "isMaster" {
					a = tc.isMaster
				}
				return a.reply, a.err
			})
			if strings.Join(calls, ",") != strings.Join(tc.wantCalls, ",") {
				t.Errorf("commands %v, want %v", calls, tc.wantCalls)
			}
			if len(tc.wantErr) == 0 {
				if err != nil || !got.Equal(at) {
					t.Errorf("got %v, %v; want %v", got, err, at)
				}
				return
			}
			for _, target := range tc.wantErr {
				if !errors.Is(err, target) {
					t.Errorf("error %v does not match %v", err, target)
				}
			}
			for _, s := range tc.wantMsg {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v, want it to contain %q", err, s)
				}
			}
		})
	}
}

// TestHelloNoFallbackAfterContextEnded: a hello cut short by ctx is not
// followed by isMaster.
func TestHelloNoFallbackAfterContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	_, err := helloTime(ctx, func(context.Context, bson.D) (bson.Raw, error) {
		calls++
		cancel()
		return nil, mongo.CommandError{Code: 11601, Name: "Interrupted"}
	})
	if err == nil || calls != 1 {
		t.Errorf("%d commands, error %v; want one command and its error", calls, err)
	}
}

// A measurement cut short by its context after some round trips returned
// keeps the best of them (each bounds the server's time on its own), so
// that an attempt bounded in time on a slow server leaves a sample.
func TestMeasureKeepsWhatReturnedBeforeTheContextEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rtts := []time.Duration{300, 200, 400, 100, 100}
		w := newWorld()
		w.wallSkew = 3 * time.Second
		w.legs = func(i int) (time.Duration, time.Duration) { return rtts[i] * time.Millisecond, 0 }
		want := w.trueOffset()
		// 300 + 200 ms returned; the third round trip is in flight when
		// the context ends.
		ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
		defer cancel()
		s, err := measure(ctx, w, mustConfig(t, WithClock(w), WithSamples(len(rtts))))
		if err != nil {
			t.Fatalf("measure: %v, want the best of the two round trips that returned", err)
		}
		if s.RTT != 200*time.Millisecond {
			t.Errorf("RTT = %v, want the better of those that returned, 200ms", s.RTT)
		}
		checkOffset(t, s, want)

		// None returned: the context's error, as before.
		ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if _, err := newEstimator(ctx, w, mustConfig(t, WithClock(w))); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("nothing returned: %v, want context.DeadlineExceeded", err)
		}
	})
}
