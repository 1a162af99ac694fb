package queue_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// outageT0 is the origin of the store times of these tests.
var outageT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is the store time ms milliseconds after outageT0.
func at(ms int) time.Time { return outageT0.Add(time.Duration(ms) * time.Millisecond) }

// stamp is a span of one stamp, ms after outageT0.
func stamp(ms int) queue.UpSpan { return queue.UpSpan{From: at(ms), To: at(ms)} }

// upSpan is the span [from, to] ms after outageT0.
func upSpan(from, to int) queue.UpSpan { return queue.UpSpan{From: at(from), To: at(to)} }

func mustRule(t *testing.T, ttl, grace time.Duration) queue.OutageRule {
	t.Helper()
	r, err := queue.NewOutageRule(ttl, grace)
	if err != nil {
		t.Fatalf("NewOutageRule(%v, %v): %v", ttl, grace, err)
	}
	return r
}

func dead(t *testing.T, r queue.OutageRule, ev []queue.UpSpan, x, exp time.Time) bool {
	t.Helper()
	d, err := r.Dead(ev, x, exp)
	if err != nil {
		t.Fatalf("Dead(%v, %v, %v): %v", ev, x, exp, err)
	}
	return d
}

// TestOutageRuleEdges: the rule at its edges, TTL 2 s (H 1 s), grace
// 30 s, the session's expiry Ê at 10 s and x = Ê − TTL at 8 s.
func TestOutageRuleEdges(t *testing.T) {
	r := mustRule(t, 2*time.Second, 30*time.Second)
	x, exp := at(8000), at(10000)
	for _, c := range []struct {
		name string
		ev   []queue.UpSpan
		dead bool
	}{
		{"no evidence", nil, false},
		{"one stamp just before Ê + grace", []queue.UpSpan{stamp(39999)}, false},
		{"one stamp at Ê + grace", []queue.UpSpan{stamp(40000)}, true},
		{"one span ending at Ê + grace", []queue.UpSpan{upSpan(39000, 40000)}, true},
		{"run of exactly TTL after x", []queue.UpSpan{upSpan(8000, 10000)}, true},
		{"run of TTL less a millisecond after x", []queue.UpSpan{upSpan(8000, 9999)}, false},
		{"run of TTL mostly before x", []queue.UpSpan{upSpan(6000, 9000)}, false},
		{"run starting before x, TTL after it", []queue.UpSpan{upSpan(5000, 10000)}, true},
		{"run of TTL before x only", []queue.UpSpan{upSpan(0, 7999)}, false},
		{"stamps exactly H apart chain", []queue.UpSpan{stamp(8000), stamp(9000), stamp(10000)}, true},
		{"a gap of H and a millisecond breaks", []queue.UpSpan{stamp(8000), stamp(9000), stamp(10001)}, false},
		{"spans joined by a gap of H", []queue.UpSpan{upSpan(8000, 8500), upSpan(9500, 10000)}, true},
		{"spans apart by more than H", []queue.UpSpan{upSpan(8000, 8500), upSpan(9501, 10000)}, false},
		{"overlapping spans, in any order", []queue.UpSpan{upSpan(9000, 10000), upSpan(8000, 9200), upSpan(8500, 8600)}, true},
		{"two short runs, a long gap between", []queue.UpSpan{upSpan(8000, 9500), upSpan(12000, 13500)}, false},
		{"a long run after a gap", []queue.UpSpan{upSpan(8000, 8100), upSpan(20000, 22000)}, true},
	} {
		if got := dead(t, r, c.ev, x, exp); got != c.dead {
			t.Errorf("%s: Dead(%v) = %v, want %v", c.name, c.ev, got, c.dead)
		}
	}
}

// TestOutageRuleRefuses: a zero grace is not a rule (the caller judges by
// expiry), nor is a TTL or grace out of range; an inverted span is an
// error, not a verdict.
func TestOutageRuleRefuses(t *testing.T) {
	for _, c := range []struct {
		ttl, grace time.Duration
		want       string
	}{
		{2 * time.Second, 0, "zero grace"},
		{0, time.Second, "TTL 0s is not positive"},
		{-time.Second, time.Second, "not positive"},
		{2 * time.Second, -time.Second, "outside"},
		{2 * time.Second, queue.MaxGrace + time.Millisecond, "outside"},
	} {
		if _, err := queue.NewOutageRule(c.ttl, c.grace); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewOutageRule(%v, %v) = %v, want an error saying %q", c.ttl, c.grace, err, c.want)
		}
	}
	if _, err := queue.NewOutageRule(2*time.Second, queue.MaxGrace); err != nil {
		t.Errorf("NewOutageRule(2s, MaxGrace) = %v, want a rule", err)
	}
	r := mustRule(t, 2*time.Second, time.Minute)
	if d, err := r.Dead([]queue.UpSpan{upSpan(9000, 8000)}, at(0), at(0)); err == nil || d {
		t.Errorf("Dead of an inverted span = %v, %v; want an error", d, err)
	}
	if d, err := (queue.OutageRule{}).Dead([]queue.UpSpan{stamp(0)}, at(0), at(0)); err == nil || d {
		t.Errorf("Dead of a zero OutageRule = %v, %v; want an error", d, err)
	}
	if _, err := queue.Chains(nil, -time.Second); err == nil {
		t.Error("Chains with a negative break: no error")
	}
}

// TestChains: chains are the union's runs with no gap above the break, in
// order; the input is left as it was.
func TestChains(t *testing.T) {
	ev := []queue.UpSpan{stamp(5000), upSpan(0, 100), stamp(1100), upSpan(50, 60), upSpan(2200, 2300), stamp(3300)}
	before := slices.Clone(ev)
	got, err := queue.Chains(ev, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.UpSpan{upSpan(0, 1100), upSpan(2200, 3300), stamp(5000)}
	if !slices.Equal(got, want) {
		t.Errorf("Chains = %v, want %v", got, want)
	}
	if !slices.Equal(ev, before) {
		t.Errorf("Chains changed its input: %v, was %v", ev, before)
	}
}

// outageCase is a random judgment: evidence, x and the expiry, on a TTL of
// 2 s, the times within a few TTLs so that both verdicts come up.
type outageCase struct {
	ev     []queue.UpSpan
	x, exp time.Time
}

func randomSpans(rng *rand.Rand, n int) []queue.UpSpan {
	ev := make([]queue.UpSpan, n)
	for i := range ev {
		from := rng.IntN(20000)
		ev[i] = upSpan(from, from+rng.IntN(3)*rng.IntN(1500)) // a third are stamps
	}
	return ev
}

func randomCase(rng *rand.Rand) outageCase {
	exp := rng.IntN(16000)
	return outageCase{ev: randomSpans(rng, rng.IntN(12)), exp: at(exp), x: at(exp - 2000)}
}

// TestOutageRuleMonotone: on random judgments (a fixed seed), more
// evidence, a smaller x, or a smaller expiry never turn dead into not dead;
// and the verdict does not depend on the order of the spans. Both verdicts
// come up often, so the checks are not vacuous.
func TestOutageRuleMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 1))
	verdicts := map[bool]int{}
	for _, grace := range []time.Duration{time.Second, 5 * time.Second} {
		r := mustRule(t, 2*time.Second, grace)
		for range 20000 {
			c := randomCase(rng)
			d := dead(t, r, c.ev, c.x, c.exp)
			verdicts[d]++
			more := append(slices.Clone(c.ev), randomSpans(rng, 1+rng.IntN(3))...)
			less := time.Duration(rng.IntN(4000)) * time.Millisecond
			shuffled := slices.Clone(c.ev)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			switch {
			case dead(t, r, shuffled, c.x, c.exp) != d:
				t.Fatalf("%+v: the order of the spans changed the verdict", c)
			case d && !dead(t, r, more, c.x, c.exp):
				t.Fatalf("%+v: dead, and not dead with more evidence %v", c, more)
			case d && !dead(t, r, c.ev, c.x.Add(-less), c.exp):
				t.Fatalf("%+v: dead, and not dead with x earlier by %v", c, less)
			case d && !dead(t, r, c.ev, c.x, c.exp.Add(-less)):
				t.Fatalf("%+v: dead, and not dead with the expiry earlier by %v", c, less)
			}
		}
	}
	if verdicts[true] < 5000 || verdicts[false] < 5000 {
		t.Fatalf("verdicts %v: too few of one kind for the checks to mean much", verdicts)
	}
}

// TestOutageRuleSince: spans that end before Since(x) change no verdict on
// x = Ê − TTL, so a store may leave them out of a read of the evidence
// since then, or return them (random judgments, a fixed seed).
func TestOutageRuleSince(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 2))
	r := mustRule(t, 2*time.Second, 3*time.Second)
	dropped := 0
	for range 20000 {
		c := randomCase(rng)
		since := r.Since(c.x)
		var kept []queue.UpSpan
		for _, s := range c.ev {
			if !s.To.Before(since) {
				kept = append(kept, s)
			}
		}
		dropped += len(c.ev) - len(kept)
		if all, some := dead(t, r, c.ev, c.x, c.exp), dead(t, r, kept, c.x, c.exp); all != some {
			t.Fatalf("%+v: Dead = %v on all spans, %v on those since %v", c, all, some, since)
		}
	}
	if dropped < 10000 {
		t.Fatalf("only %d spans ended before Since: the check means little", dropped)
	}
}
