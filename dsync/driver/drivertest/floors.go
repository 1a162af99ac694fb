package drivertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// raise records floor e of key, with the nonce "f<e>".
func raise(t *testing.T, ctx context.Context, st driver.Store, key string, e uint64, sent time.Time) {
	t.Helper()
	if err := st.RaiseFloor(ctx, key, driver.Floor{Epoch: e, Nonce: fmt.Sprint("f", e), Seg: testSeg}, sent); err != nil {
		t.Fatalf("RaiseFloor(%s, %d): %v", key, e, err)
	}
}

// testSeg is the segment of the floors these tests raise: the one whose
// first epoch is 1.
const testSeg = 1

// checkFloor checks that Floor(key, below) is want (0: none).
func checkFloor(t *testing.T, ctx context.Context, st driver.Store, key string, below, want uint64) {
	t.Helper()
	f, found, err := st.Floor(ctx, key, testSeg, below)
	switch {
	case err != nil:
		t.Errorf("Floor(%s, %d): %v", key, below, err)
	case want == 0 && found:
		t.Errorf("Floor(%s, %d) = %+v, want none", key, below, f)
	case want != 0 && !found:
		t.Errorf("Floor(%s, %d) = none, want %d", key, below, want)
	case want != 0 && (f.Epoch != want || f.Nonce != fmt.Sprint("f", want)):
		t.Errorf("Floor(%s, %d) = %+v, want {%d f%d}", key, below, f, want, want)
	}
}

// testFloor: Floor reads the highest floor of the key below an epoch (any,
// if 0), with its nonce; raising a floor again succeeds.
func (s *suite) testFloor(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	checkFloor(t, ctx, st, "k", 0, 0)
	for _, e := range []uint64{5, 9, 10, 12} {
		raise(t, ctx, st, "k", e, sent)
	}
	raise(t, ctx, st, "k", 10, sent.Add(time.Second)) // again: fine, whether or not recorded before
	raise(t, ctx, st, "k2", 100, sent)                // another key's
	raise(t, ctx, st, "k/", 100, sent)
	c := claim("k", 50, "n", sent) // not floors
	insert(t, ctx, st, c, shadow(c), end(c, driver.KindRelease, sent))

	checkFloor(t, ctx, st, "k", 0, 12)
	checkFloor(t, ctx, st, "k", 13, 12)
	checkFloor(t, ctx, st, "k", 12, 10) // strictly below
	checkFloor(t, ctx, st, "k", 11, 10)
	checkFloor(t, ctx, st, "k", 10, 9) // 10 after 9: numbers, not strings
	checkFloor(t, ctx, st, "k", 6, 5)
	checkFloor(t, ctx, st, "k", 5, 0)
	checkFloor(t, ctx, st, "k", 1, 0)
	checkFloor(t, ctx, st, "none", 0, 0)
	checkFloor(t, ctx, st, "k2", 100, 0)
	checkFloor(t, ctx, st, "k2", 0, 100)
}

// testRaiseFloorConcurrent: floors raised at once, in any order, each more
// than once, leave the highest readable.
func (s *suite) testRaiseFloorConcurrent(t *testing.T) {
	st, ctx := s.store(t)
	const procs = 16
	sent := now(st)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range procs {
		for _, e := range []uint64{uint64(i + 2), uint64(procs + 1 - i)} {
			wg.Go(func() {
				<-start
				if err := st.RaiseFloor(ctx, "k", driver.Floor{Epoch: e, Nonce: fmt.Sprint("f", e), Seg: testSeg}, sent); err != nil {
					t.Errorf("RaiseFloor(k, %d): %v", e, err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	checkFloor(t, ctx, st, "k", 0, procs+1)
	checkFloor(t, ctx, st, "k", procs+1, procs)
}

// testPrune: Prune deletes the key's claims, shadows, markers and floors
// with 1 < epoch < below sent before sentBefore, and nothing else.
func (s *suite) testPrune(t *testing.T) {
	st, ctx := s.store(t)
	before := now(st)
	old := before.Add(-time.Second)
	const below = 6
	// sent: when each epoch's documents were sent; 3 and 4 not before.
	sent := func(e uint64) time.Time {
		switch e {
		case 3:
			return before
		case 4:
			return before.Add(time.Second)
		}
		return old
	}
	var docs []driver.Doc // of each key, each epoch: its claim, shadow, end
	for _, key := range []string{"k", "k2", "k/"} {
		for e := uint64(1); e <= 7; e++ {
			c := claim(key, e, fmt.Sprint("n", e), sent(e))
			docs = append(docs, c, shadow(c), end(c, driver.KindRelease, sent(e)))
			raise(t, ctx, st, key, e, sent(e))
		}
	}
	insert(t, ctx, st, docs...)

	if err := st.Prune(ctx, "k", testSeg, below, before); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	deleted := func(d driver.Doc) bool { return d.Key == "k" && (d.Epoch == 2 || d.Epoch == 5) }
	for _, d := range docs {
		if _, found := get(t, ctx, st, d.ID); found == deleted(d) {
			t.Errorf("after Prune(k, %d, T): %s (%s, epoch %d, sent %v after T) exists: %v, want %v",
				below, d.ID, d.Kind, d.Epoch, d.Sent.Sub(before), found, !deleted(d))
		}
	}
	// k's floors: 2 and 5 are gone.
	for below, want := range map[uint64]uint64{0: 7, 7: 6, 6: 4, 5: 4, 4: 3, 3: 1, 2: 1} {
		checkFloor(t, ctx, st, "k", below, want)
	}
	checkFloor(t, ctx, st, "k2", 3, 2)
	checkFloor(t, ctx, st, "k/", 6, 5)
}
