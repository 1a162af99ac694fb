package hint

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// newTestGuard returns a guard on the bubble's clock (store time = local
// time, known exactly).
func newTestGuard(rate float64, burst int) *guard {
	start := time.Now()
	return newGuard(
		func() driver.Interval { n := time.Now(); return driver.Interval{Earliest: n, Latest: n} },
		func() time.Duration { return time.Since(start) },
		rate, burst)
}

func TestGuardDropsOldFutureAndTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(1000, 1000)
		now := time.Now()
		cases := []struct {
			name string
			m    msg
			want bool
		}{
			{"fresh", msg{from: "a", seq: 1, sent: now}, true},
			{"the same again", msg{from: "a", seq: 1, sent: now}, false},
			{"the same seq of another sender", msg{from: "b", seq: 1, sent: now}, true},
			{"sent longer than maxAge ago", msg{from: "a", seq: 2, sent: now.Add(-maxAge - time.Millisecond)}, false},
			{"sent further than maxAge ahead", msg{from: "a", seq: 3, sent: now.Add(maxAge + time.Millisecond)}, false},
			{"sent just within maxAge", msg{from: "a", seq: 4, sent: now.Add(-maxAge + time.Millisecond)}, true},
		}
		for _, c := range cases {
			if got := g.admit(c.m); got != c.want {
				t.Errorf("%s: admit = %v, want %v", c.name, got, c.want)
			}
		}
	})
}

// TestGuardBoundsTheRate: however many valid hints come, no more than the
// burst pass at once, and the rate a second after.
func TestGuardBoundsTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, burst = 20, 50
		g := newTestGuard(rate, burst)
		seq := uint64(0)
		flood := func(n int) (taken int) {
			for range n {
				seq++
				if g.admit(msg{from: "a", seq: seq, sent: time.Now()}) {
					taken++
				}
			}
			return taken
		}
		if got := flood(10000); got != burst {
			t.Errorf("a flood at once: %d taken, want the burst, %d", got, burst)
		}
		time.Sleep(time.Second)
		if got := flood(10000); got != rate {
			t.Errorf("a flood a second later: %d taken, want the rate, %d", got, rate)
		}
		// Ten seconds of floods, every 10 ms: at most the rate on average.
		total := 0
		for range 1000 {
			time.Sleep(10 * time.Millisecond)
			total += flood(100)
		}
		if total > 10*rate+burst {
			t.Errorf("ten seconds of floods: %d taken, want at most %d", total, 10*rate+burst)
		}
		if total < 10*rate-1 {
			t.Errorf("ten seconds of floods: %d taken, want about %d", total, 10*rate)
		}
	})
}

// TestGuardRemembersBoundedly: past maxSeen hints remembered, old ones
// are forgotten; while all are recent, new hints are dropped rather than
// the memory growing.
func TestGuardRemembersBoundedly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(1e12, maxSeen*2)
		for i := range maxSeen {
			if !g.admit(msg{from: "a", seq: uint64(i), sent: time.Now()}) {
				t.Fatalf("hint %d dropped", i)
			}
		}
		if g.admit(msg{from: "a", seq: maxSeen, sent: time.Now()}) {
			t.Error("a hint past maxSeen recent ones was taken")
		}
		time.Sleep(maxAge + time.Second)
		if !g.admit(msg{from: "a", seq: maxSeen + 1, sent: time.Now()}) {
			t.Error("a hint was dropped after the old ones could be forgotten")
		}
		if len(g.seen) != 1 {
			t.Errorf("%d hints remembered, want 1", len(g.seen))
		}
	})
}
