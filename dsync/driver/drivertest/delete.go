package drivertest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testSeg is the segment of the claims these tests insert: the one whose
// first epoch is 1.
const testSeg = 1

// testDelete: Delete deletes exactly the documents it names (of any kind),
// skips the IDs that do not exist, and leaves every other document,
// including those of other keys whose IDs begin the same way.
func (s *suite) testDelete(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	var docs []driver.Doc // of each key, each epoch: its claim, shadow, end
	for _, key := range []string{"k", "k2", "k/"} {
		for e := uint64(1); e <= 4; e++ {
			c := claim(key, e, fmt.Sprint("n", e), sent)
			docs = append(docs, c, shadow(c), end(c, driver.KindRelease, sent))
		}
	}
	g := gateDoc("k", testSeg, 7, sent)
	docs = append(docs, g)
	insert(t, ctx, st, docs...)

	gone := map[string]bool{}
	var ids []string
	for _, d := range docs {
		if d.Key == "k" && (d.Epoch == 2 || d.Epoch == 3) || d.ID == g.ID {
			gone[d.ID] = true
			ids = append(ids, d.ID)
		}
	}
	ids = append(ids, driver.ClaimID("k", 9), driver.EndID("k", 2, "other")) // never inserted
	if err := st.Delete(ctx, ids); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, d := range docs {
		if _, found := get(t, ctx, st, d.ID); found == gone[d.ID] {
			t.Errorf("after Delete: %s (%s, epoch %d) exists: %v, want %v", d.ID, d.Kind, d.Epoch, found, !gone[d.ID])
		}
	}
	if err := st.Delete(ctx, ids); err != nil {
		t.Errorf("Delete of IDs already deleted: %v", err)
	}
	if err := st.Delete(ctx, nil); err != nil {
		t.Errorf("Delete of no ID: %v", err)
	}
	// An ID deleted can be inserted again.
	insert(t, ctx, st, docs[3])
	checkStored(t, ctx, st, docs[3])
}

// testDeleteConcurrent: deletes of the same documents sent at once by
// several processes all succeed, and leave none of them.
func (s *suite) testDeleteConcurrent(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	var ids []string
	for e := uint64(1); e <= 8; e++ {
		c := claim("k", e, fmt.Sprint("n", e), sent)
		insert(t, ctx, st, c, shadow(c))
		ids = append(ids, shadow(c).ID, c.ID)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := st.Delete(ctx, ids); err != nil {
				t.Errorf("Delete: %v", err)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if _, found := get(t, ctx, st, id); found {
			t.Errorf("after concurrent deletes: %s exists", id)
		}
	}
}
