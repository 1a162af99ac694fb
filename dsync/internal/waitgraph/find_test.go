package waitgraph_test

import (
	"slices"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
)

// wellFormed checks that c is a cycle of the package doc's edges, from
// the set from, through want's sets in that order: each edge's holder
// holds the key its note waits at, belongs to the next edge's set, and is
// named in that set's note.
func wellFormed(t *testing.T, c waitgraph.Cycle, want ...string) {
	t.Helper()
	if got := sets(c); !slices.Equal(got, want) {
		t.Fatalf("cycle through %v; want %v", got, want)
	}
	for i, e := range c {
		next := c[(i+1)%len(c)].Note
		if e.Holder.Claim.Key != e.Note.Key || e.Holder.Waiter != next.Set || !slices.Contains(next.Holds, e.Holder.Claim) {
			t.Errorf("edge %d: %s waits at %s for %+v, which is not a hold of %s's note %+v", i, e.Note.Set, e.Note.Key, e.Holder, next.Set, next)
		}
	}
}

// TestTwoSets: A holds a and waits at b, B holds b and waits at a. Each
// finds the cycle through itself, verified, and both name the younger, B,
// as the victim; the record names both waits.
func TestTwoSets(t *testing.T) {
	s := newScene(t)
	a, b := s.hold("A", "a"), s.hold("B", "b")
	s.wait("A", "b")
	s.wait("B", "a")
	for _, from := range [][]string{{"A", "B"}, {"B", "A"}} {
		c, found := s.check(from[0])
		if !found {
			t.Fatalf("Check(%s) found no cycle", from[0])
		}
		wellFormed(t, c, from...)
		if v := c.Victim(); v != "B" {
			t.Errorf("Check(%s): victim %s; want B, the younger", from[0], v)
		}
	}
	c, _ := s.check("A")
	want := []driver.DeadlockEdge{{Set: "A", Key: "b", Epoch: 2, HeldBy: "B", Token: b.Epoch}, {Set: "B", Key: "a", Epoch: 2, HeldBy: "A", Token: a.Epoch}}
	if got := c.Record(); !slices.Equal(got, want) {
		t.Errorf("Record() = %+v; want %+v", got, want)
	}
}

// TestThreeSets: A (a, waits at b), B (b, waits at c), C (c, waits at
// a). Each of them finds the cycle, in its own order from itself.
func TestThreeSets(t *testing.T) {
	s := newScene(t)
	for _, set := range []string{"A", "B", "C"} {
		s.hold(set, "k"+set)
	}
	s.wait("A", "kB")
	s.wait("B", "kC")
	s.wait("C", "kA")
	for _, order := range [][]string{{"A", "B", "C"}, {"B", "C", "A"}, {"C", "A", "B"}} {
		c, found := s.check(order[0])
		if !found {
			t.Fatalf("Check(%s) found no cycle", order[0])
		}
		wellFormed(t, c, order...)
		if len(c.Claims()) != 6 {
			t.Errorf("Claims() = %v; want the 6 claims of 3 waits", c.Claims())
		}
	}
}

// TestChainIsNoCycle: chains of waits that never come back to their
// start break nobody, from any set of the chain: a holder of no set, a
// set with no note (it waits for nothing), a note that does not name the
// holder (of an earlier wait: the set let that hold go and holds the key
// again with a new claim), a set whose latest note waits elsewhere though
// an older one would close a cycle, and a return to a claim of the start
// that its note does not name.
func TestChainIsNoCycle(t *testing.T) {
	cases := []struct {
		name  string
		build func(s *scene)
		sets  []string
	}{{
		name: "to a single lock",
		build: func(s *scene) {
			s.hold("A", "a")
			s.hold("B", "b")
			s.hold("", "c")
			s.wait("A", "b")
			s.wait("B", "c")
		},
		sets: []string{"A", "B"},
	}, {
		name: "to a set that does not wait",
		build: func(s *scene) {
			s.hold("A", "a")
			s.hold("B", "b")
			s.wait("A", "b")
		},
		sets: []string{"A", "B"},
	}, {
		name: "to a note without the holder",
		build: func(s *scene) {
			// B held x and waited at a, behind A; then gave that wait up,
			// let x go, and holds b with a new claim, waiting no more.
			s.hold("A", "a")
			x := s.hold("B", "x")
			s.end(s.wait("B", "a"))
			s.end(x)
			s.hold("B", "b")
			s.wait("A", "b")
		},
		sets: []string{"A", "B"},
	}, {
		name: "to a set whose older note only names the holder",
		build: func(s *scene) {
			// B holds b; its note 1 waited at a (behind A) and named b;
			// its latest, note 2, waits at e behind a single lock and
			// names only y (as a reader that lost sight of an end would
			// show it).
			s.hold("A", "a")
			s.hold("B", "b")
			s.wait("B", "a")
			s.hold("", "e")
			y := s.add("B", "y", false)
			s.note("B", s.add("B", "e", true), []driver.ClaimRef{y})
			s.wait("A", "b")
		},
		sets: []string{"A", "B"},
	}, {
		name: "back to a claim of the start its note does not name",
		build: func(s *scene) {
			// A's claim of x is unended as far as the reader saw (its end
			// not yet landed) but not among the holds of A's note: B,
			// waiting behind it, does not wait for A's current wait.
			s.hold("A", "a")
			s.add("A", "x", false)
			s.hold("B", "b")
			s.wait("B", "x")
			s.wait("A", "b")
		},
		sets: []string{"A", "B"},
	}, {
		name: "a long chain",
		build: func(s *scene) {
			for _, set := range []string{"A", "B", "C", "D"} {
				s.hold(set, "k"+set)
			}
			s.hold("", "kE")
			s.wait("A", "kB")
			s.wait("B", "kC")
			s.wait("C", "kD")
			s.wait("D", "kE")
		},
		sets: []string{"A", "B", "C", "D"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t)
			tc.build(s)
			for _, set := range tc.sets {
				if c, found := s.find(set); found {
					t.Errorf("Find(%s) found a cycle through %v in a chain", set, sets(c))
				}
			}
		})
	}
}

// TestCycleNotThroughW: W waits behind B, and B and C wait for each
// other. W finds nothing and so does nothing; B and C each find their
// own cycle, without W.
func TestCycleNotThroughW(t *testing.T) {
	s := newScene(t)
	s.hold("W", "w")
	s.hold("B", "b")
	s.hold("C", "c")
	s.wait("W", "b")
	s.wait("B", "c")
	s.wait("C", "b")
	if c, found := s.find("W"); found {
		t.Fatalf("Find(W) found a cycle through %v; want none: W is on no cycle", sets(c))
	}
	for _, order := range [][]string{{"B", "C"}, {"C", "B"}} {
		c, found := s.check(order[0])
		if !found {
			t.Fatalf("Check(%s) found no cycle", order[0])
		}
		wellFormed(t, c, order...)
	}
}
