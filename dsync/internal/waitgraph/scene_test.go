package waitgraph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
)

// A scene is a store's records as the Reader sees them: the claims of
// each key, in epoch order, each holding or waiting, ended or not, with
// its set; and the sets' notes. It counts the reads of each check.
type scene struct {
	t      *testing.T
	claims map[driver.ClaimRef]*claim
	keys   map[string][]driver.ClaimRef
	notes  map[string][]driver.Wait
	held   map[string][]driver.ClaimRef // each set's current holds
	since  map[string]time.Time

	// beforeUnended, if set, runs before each Unended answers: what ends
	// between the passes.
	beforeUnended func(driver.ClaimRef)
	unendedReads  []driver.ClaimRef
	noteReads     map[string]int
	// failHolders and failUnended, if set, are what those reads fail with.
	failHolders, failUnended error
}

type claim struct {
	set     string
	waiting bool
	ended   bool
}

var base = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func newScene(t *testing.T) *scene {
	return &scene{t: t, claims: map[driver.ClaimRef]*claim{}, keys: map[string][]driver.ClaimRef{},
		notes: map[string][]driver.Wait{}, held: map[string][]driver.ClaimRef{}, since: map[string]time.Time{},
		noteReads: map[string]int{}}
}

// add queues a claim of key for set ("" for a single lock), at the next
// epoch of key.
func (s *scene) add(set, key string, waiting bool) driver.ClaimRef {
	epoch := uint64(len(s.keys[key]) + 1)
	c := driver.ClaimRef{Key: key, Epoch: epoch, Nonce: fmt.Sprintf("%s/%s@%d", set, key, epoch)}
	s.claims[c] = &claim{set: set, waiting: waiting}
	s.keys[key] = append(s.keys[key], c)
	if set != "" {
		if _, ok := s.since[set]; !ok {
			s.since[set] = base.Add(time.Duration(len(s.since)) * time.Second) // later sets are younger
		}
	}
	return c
}

// hold makes set hold key (with a new claim), as one of its holds.
func (s *scene) hold(set, key string) driver.ClaimRef {
	c := s.add(set, key, false)
	if set != "" {
		s.held[set] = append(s.held[set], c)
	}
	return c
}

// wait makes set wait at key with a new claim, and records its next note,
// naming its current holds.
func (s *scene) wait(set, key string) driver.ClaimRef {
	c := s.add(set, key, true)
	s.note(set, c, s.held[set])
	return c
}

// note records set's next note: waiting with c, holding holds.
func (s *scene) note(set string, c driver.ClaimRef, holds []driver.ClaimRef) {
	s.notes[set] = append(s.notes[set], driver.Wait{Set: set, N: uint64(len(s.notes[set]) + 1), Key: c.Key, Epoch: c.Epoch,
		Nonce: c.Nonce, Holds: append([]driver.ClaimRef(nil), holds...), Since: s.since[set], Session: "sess-" + set})
}

// end ends c (released or withdrawn), and takes it off its set's holds.
func (s *scene) end(c driver.ClaimRef) {
	s.claims[c].ended = true
	set := s.claims[c].set
	for i, h := range s.held[set] {
		if h == c {
			s.held[set] = append(s.held[set][:i:i], s.held[set][i+1:]...)
		}
	}
}

// Holders implements waitgraph.Reader: the unended holding claims of c's
// key ahead of c.
func (s *scene) Holders(_ context.Context, c driver.ClaimRef) ([]waitgraph.Holder, error) {
	if s.failHolders != nil {
		return nil, s.failHolders
	}
	var out []waitgraph.Holder
	for _, r := range s.keys[c.Key] {
		if cl := s.claims[r]; r.Epoch < c.Epoch && !cl.ended && !cl.waiting {
			out = append(out, waitgraph.Holder{Claim: r, Waiter: cl.set})
		}
	}
	return out, nil
}

// LatestWait implements waitgraph.Reader.
func (s *scene) LatestWait(_ context.Context, set string) (driver.Wait, bool, error) {
	s.noteReads[set]++
	ns := s.notes[set]
	if len(ns) == 0 {
		return driver.Wait{}, false, nil
	}
	return ns[len(ns)-1], true, nil
}

// Unended implements waitgraph.Reader.
func (s *scene) Unended(_ context.Context, c driver.ClaimRef) (bool, error) {
	if s.beforeUnended != nil {
		s.beforeUnended(c)
	}
	s.unendedReads = append(s.unendedReads, c)
	if s.failUnended != nil {
		return false, s.failUnended
	}
	cl, ok := s.claims[c]
	if !ok {
		return false, fmt.Errorf("no claim %+v", c)
	}
	return !cl.ended, nil
}

// check runs Check from set, failing the test on an error or on a note
// read twice in one check.
func (s *scene) check(set string) (waitgraph.Cycle, bool) {
	s.t.Helper()
	clear(s.noteReads)
	s.unendedReads = nil
	c, found, err := waitgraph.Check(s.t.Context(), s, set)
	if err != nil {
		s.t.Fatalf("Check(%s): %v", set, err)
	}
	for z, n := range s.noteReads {
		if n > 1 {
			s.t.Errorf("Check(%s) read %s's latest note %d times; want once at most", set, z, n)
		}
	}
	return c, found
}

// find runs the first pass alone from set.
func (s *scene) find(set string) (waitgraph.Cycle, bool) {
	s.t.Helper()
	c, found, err := waitgraph.Find(s.t.Context(), s, set)
	if err != nil {
		s.t.Fatalf("Find(%s): %v", set, err)
	}
	return c, found
}

// sets names the sets of c, in its order.
func sets(c waitgraph.Cycle) []string {
	out := make([]string, len(c))
	for i, e := range c {
		out[i] = e.Note.Set
	}
	return out
}

// ring builds n sets s0 ... s(n-1), each holding key k<i> and waiting at
// k<i+1>, the last at k0: a cycle of n sets.
func ring(t *testing.T, n int) (*scene, []string) {
	s := newScene(t)
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("s%02d", i)
		s.hold(names[i], fmt.Sprintf("k%02d", i))
	}
	for i := range n {
		s.wait(names[i], fmt.Sprintf("k%02d", (i+1)%n))
	}
	return s, names
}
