package waitgraph_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
)

// TestResolvedBetweenPasses: a cycle of two and one of three sets, each
// of whose 2L claims ends after the first pass (a holder unlocks, a wait
// is given up): the second pass sees it, and Check finds nothing. Left
// alone, the second pass reads exactly the cycle's 2L claims, and Check
// finds the cycle.
func TestResolvedBetweenPasses(t *testing.T) {
	for _, n := range []int{2, 3} {
		s, names := ring(t, n)
		c, found := s.check(names[0])
		if !found {
			t.Fatalf("ring of %d: Check found no cycle", n)
		}
		if !sameClaims(s.unendedReads, c.Claims()) || len(c.Claims()) != 2*n {
			t.Errorf("ring of %d: the second pass read %v; want the cycle's %d claims %v", n, s.unendedReads, 2*n, c.Claims())
		}
		for i, gone := range c.Claims() {
			t.Run(fmt.Sprintf("ring of %d, claim %d ends", n, i), func(t *testing.T) {
				s, names := ring(t, n)
				ended := false
				s.beforeUnended = func(driver.ClaimRef) {
					if !ended { // after the first pass, before the second reads anything
						ended = true
						s.end(gone)
					}
				}
				if c, found := s.check(names[0]); found {
					t.Errorf("Check found a cycle through %v after %+v ended", sets(c), gone)
				}
				if !ended {
					t.Error("the second pass read no claim")
				}
			})
		}
	}
}

// sameClaims tells whether a and b hold the same claims, in any order.
func sameClaims(a, b []driver.ClaimRef) bool {
	key := func(c driver.ClaimRef) string { return fmt.Sprintf("%s@%d~%s", c.Key, c.Epoch, c.Nonce) }
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i, c := range a {
		as[i] = key(c)
	}
	for i, c := range b {
		bs[i] = key(c)
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// TestMaxCycle: a ring of MaxCycle (16) sets is found from each of them;
// a ring of 17 from none, as the package doc states.
func TestMaxCycle(t *testing.T) {
	s, names := ring(t, waitgraph.MaxCycle)
	for i, from := range names {
		c, found := s.check(from)
		if !found {
			t.Fatalf("ring of %d: Check(%s) found no cycle", waitgraph.MaxCycle, from)
		}
		wellFormed(t, c, append(slices.Clone(names[i:]), names[:i]...)...)
	}
	s, names = ring(t, waitgraph.MaxCycle+1)
	for _, from := range names {
		if c, found := s.find(from); found {
			t.Fatalf("ring of %d: Find(%s) found a cycle of %d sets; want none over %d", waitgraph.MaxCycle+1, from, len(c), waitgraph.MaxCycle)
		}
	}
}

// TestVictimAgreed: in a cycle of three, every member names the same
// victim, the set of the latest Since, wherever in the cycle it is; of
// equal Since, the greatest set identity.
func TestVictimAgreed(t *testing.T) {
	cases := []struct {
		since map[string]time.Duration
		want  string
	}{
		{map[string]time.Duration{"s1": 2, "s2": 5, "s3": 1}, "s2"},
		{map[string]time.Duration{"s1": 9, "s2": 5, "s3": 1}, "s1"},
		{map[string]time.Duration{"s1": 5, "s2": 1, "s3": 5}, "s3"},
		{map[string]time.Duration{"s1": 7, "s2": 7, "s3": 1}, "s2"},
	}
	for _, tc := range cases {
		s := newScene(t)
		for set, d := range tc.since {
			s.since[set] = base.Add(d * time.Second)
		}
		s.hold("s1", "a")
		s.hold("s2", "b")
		s.hold("s3", "c")
		s.wait("s1", "b")
		s.wait("s2", "c")
		s.wait("s3", "a")
		for _, from := range []string{"s1", "s2", "s3"} {
			c, found := s.check(from)
			if !found {
				t.Fatalf("%v: Check(%s) found no cycle", tc.since, from)
			}
			if v := c.Victim(); v != tc.want {
				t.Errorf("%v: from %s the victim is %s; want %s", tc.since, from, v, tc.want)
			}
		}
	}
}

// TestOverlappingCyclesOneActs: B waits at k, which A and C both hold
// (readers); A waits at b1 and C at b2, both held by B. Two cycles share
// B. Whatever cycle each set finds, the youngest set on a cycle finds
// itself the victim of the cycle it found, so one set acts.
func TestOverlappingCyclesOneActs(t *testing.T) {
	for _, youngest := range []string{"A", "B", "C"} {
		s := newScene(t)
		for i, set := range []string{"A", "B", "C"} {
			s.since[set] = base.Add(time.Duration(i) * time.Second)
		}
		s.since[youngest] = base.Add(time.Minute)
		s.hold("A", "k")
		s.hold("C", "k")
		s.hold("B", "b1")
		s.hold("B", "b2")
		s.wait("A", "b1")
		s.wait("C", "b2")
		s.wait("B", "k")
		var acts []string
		for _, set := range []string{"A", "B", "C"} {
			c, found := s.check(set)
			if !found {
				t.Fatalf("youngest %s: Check(%s) found no cycle", youngest, set)
			}
			if c.Victim() == set {
				acts = append(acts, set)
			}
		}
		if !slices.Contains(acts, youngest) {
			t.Errorf("youngest %s: the sets that find themselves victims are %v; want %s among them", youngest, acts, youngest)
		}
	}
}

// TestReadErrorFindsNothing: a read that fails in either pass ends the
// check with that error, wrapped, and no cycle.
func TestReadErrorFindsNothing(t *testing.T) {
	boom := errors.New("boom")
	for _, fail := range []string{"Holders", "Unended"} {
		s, names := ring(t, 2)
		if fail == "Holders" {
			s.failHolders = boom
		} else {
			s.failUnended = boom
		}
		c, found, err := waitgraph.Check(t.Context(), s, names[0])
		if !errors.Is(err, boom) || found || c != nil {
			t.Errorf("Check with %s failing = %v, %v, %v; want no cycle and an error wrapping %v", fail, c, found, err, boom)
		}
	}
}
