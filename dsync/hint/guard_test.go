package hint

import (
	"fmt"
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

// TestGuardRemembersBoundedly: what is remembered of the hints seen is
// bounded by sender (a window of seqs each), and past maxSenders senders
// whose hints are recent, a hint of a new sender is dropped rather than
// the memory growing; once their hints are too old to be taken, they are
// forgotten.
func TestGuardRemembersBoundedly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(1e12, maxSenders*2)
		for i := range maxSenders {
			if !g.admit(msg{from: fmt.Sprint(i), seq: 1, sent: time.Now()}) {
				t.Fatalf("the hint of sender %d dropped", i)
			}
		}
		if g.admit(msg{from: "new", seq: 1, sent: time.Now()}) {
			t.Error("a hint of a sender past maxSenders recent ones was taken")
		}
		time.Sleep(maxAge + time.Second)
		if !g.admit(msg{from: "new", seq: 1, sent: time.Now()}) {
			t.Error("a hint was dropped after the old senders could be forgotten")
		}
		if len(g.seen) != 1 {
			t.Errorf("%d senders remembered, want 1", len(g.seen))
		}
	})
}

// TestGuardRemembersHintsRefusedOverTheRate: a hint refused over the
// rate is not taken when played again once tokens came back; the real
// hints after it are.
func TestGuardRemembersHintsRefusedOverTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(1, 1)
		first := msg{from: "a", seq: 1, sent: time.Now()}
		over := msg{from: "a", seq: 2, sent: time.Now()}
		if !g.admit(first) || g.admit(over) {
			t.Fatal("with a burst of 1, want the first hint taken and the second refused")
		}
		time.Sleep(2 * time.Second) // tokens come back; both still fresh
		if g.admit(over) {
			t.Error("a hint refused over the rate was taken when played again")
		}
		if !g.admit(msg{from: "a", seq: 3, sent: time.Now()}) {
			t.Error("a real hint after the replay was refused")
		}
	})
}

// TestGuardReplaysSpendNoTokens: hints played again, taken or refused
// before, take no token: the real ones after them are taken.
func TestGuardReplaysSpendNoTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(1e-9, 3)
		taken := msg{from: "a", seq: 1, sent: time.Now()}
		g.admit(taken)
		for range 1000 {
			g.admit(taken)
		}
		for seq := uint64(2); seq <= 3; seq++ {
			if !g.admit(msg{from: "a", seq: seq, sent: time.Now()}) {
				t.Errorf("the real hint %d after 1000 replays was refused", seq)
			}
		}
	})
}

// TestGuardWindow: a sender's hints are taken once each in whatever order
// they come within windowLen of its highest seq seen; one further below
// is dropped, as seen.
func TestGuardWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(1e12, 1<<20)
		admit := func(seq uint64) bool { return g.admit(msg{from: "a", seq: seq, sent: time.Now()}) }
		for _, c := range []struct {
			seq  uint64
			want bool
		}{
			{5, true}, {3, true}, {5, false}, {3, false}, {4, true},
			{5 + 64, true}, {6, true}, {6, false}, {5 + 64 + 1000, true},
			{5 + 64 + 1000 - windowLen + 1, true}, {5 + 64 + 1000 - windowLen, false},
			{5 + 64, false}, {5 + 64 + 1000 + 5000, true}, {5 + 64 + 1000, false},
			{5 + 64 + 1000 + 5000 - 1, true},
		} {
			if got := admit(c.seq); got != c.want {
				t.Errorf("seq %d: admit = %v, want %v", c.seq, got, c.want)
			}
		}
	})
}
