package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testInsert: an insert creates the document, with every field; a second
// insert of its ID answers ErrExists and leaves it as it was.
func (s *suite) testInsert(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	c := claim("k", 1<<40, "n1", sent)
	c.Owner = "ö wner ✓"
	shared := claim("k", 2, "n2", sent.Add(time.Second))
	shared.Mode, shared.Weight, shared.Limit = driver.Shared, 1, 0
	release := end(c, driver.KindRelease, sent.Add(2*time.Second))
	docs := []driver.Doc{c, shared, shadow(c), release}
	insert(t, ctx, st, docs...)
	for _, d := range docs {
		checkStored(t, ctx, st, d)
	}

	// A duplicate of each, every field changed but the ID: refused, and
	// the stored document unchanged.
	for _, d := range docs {
		dup := claim("other", 7, "n-dup", sent.Add(time.Hour))
		dup.ID, dup.Kind = d.ID, driver.KindWithdraw
		if err := st.Insert(ctx, dup); !errors.Is(err, driver.ErrExists) {
			t.Errorf("Insert of existing %s = %v, want ErrExists", d.ID, err)
		}
		checkStored(t, ctx, st, d)
	}
}

// testInsertConcurrent: of many inserts of one ID at once, exactly one
// succeeds, and its document is the one stored.
func (s *suite) testInsertConcurrent(t *testing.T) {
	st, ctx := s.store(t)
	const procs, rounds = 16, 6
	for r := range rounds {
		docs := make([]driver.Doc, procs)
		for i := range docs {
			c := claim("k", uint64(r+1), fmt.Sprintf("n%d-%d", r, i), now(st))
			if r%2 == 1 { // markers as well as claims
				c = end(claim("k", uint64(r), "n", c.Sent), driver.KindDead, c.Sent)
				c.Session = fmt.Sprintf("c%019d", i)
			}
			docs[i] = c
		}
		errs := insertAtOnce(ctx, docs, func(ctx context.Context, d driver.Doc) error { return st.Insert(ctx, d) })
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("round %d: inserts %d and %d of %s both succeeded", r, won, i, docs[i].ID)
			case err == nil:
				won = i
			case !errors.Is(err, driver.ErrExists):
				t.Errorf("round %d: insert %d: %v", r, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no insert of %s succeeded", r, docs[0].ID)
		}
		checkStored(t, ctx, st, docs[won])
	}
}

// insertAtOnce calls insert with every doc, each in a goroutine, as much at
// once as it can, and returns the errors.
func insertAtOnce(ctx context.Context, docs []driver.Doc, insert func(context.Context, driver.Doc) error) []error {
	errs := make([]error, len(docs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, d := range docs {
		wg.Go(func() {
			<-start
			errs[i] = insert(ctx, d)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// testInsertOrdered: InsertOrdered creates its documents up to the first
// whose ID exists, returns that one's index, and creates none after it.
func (s *suite) testInsertOrdered(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	insertOrdered := func(want int, docs ...driver.Doc) {
		t.Helper()
		dup, err := st.InsertOrdered(ctx, docs)
		if err != nil {
			t.Fatalf("InsertOrdered: %v", err)
		}
		if dup != want {
			t.Errorf("InsertOrdered = %d, want %d", dup, want)
		}
	}
	absent := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if _, found := get(t, ctx, st, id); found {
				t.Errorf("%s was created after the duplicate", id)
			}
		}
	}

	c1 := claim("k", 1, "n1", sent)
	insertOrdered(-1, c1, shadow(c1))
	checkStored(t, ctx, st, c1)
	checkStored(t, ctx, st, shadow(c1))

	// The duplicate in the middle: those before are created, it is left
	// as it was, those after are not created.
	c2, c3 := claim("k", 2, "n2", sent), claim("k", 3, "n3", sent)
	c1again := claim("k", 1, "n1-again", sent.Add(time.Second))
	insertOrdered(2, c2, shadow(c2), c1again, c3, shadow(c3))
	checkStored(t, ctx, st, c2)
	checkStored(t, ctx, st, shadow(c2))
	checkStored(t, ctx, st, c1)
	absent(c3.ID, shadow(c3).ID)

	// The duplicate first: nothing is created.
	c2again := claim("k", 2, "n2-again", sent)
	insertOrdered(0, c2again, shadow(c2again))
	absent(shadow(c2again).ID)
	checkStored(t, ctx, st, c2)

	// A duplicate within the request: its first copy is created.
	c4, c4again := claim("k", 4, "n4", sent), claim("k", 4, "n4-again", sent)
	insertOrdered(1, c4, c4again, c3)
	checkStored(t, ctx, st, c4)
	absent(c3.ID)
}

// testInsertOrderedConcurrent: as the protocol claims an epoch, several
// processes insert its claim and their shadow at once: one claim and its
// shadow are created, and no other shadow.
func (s *suite) testInsertOrderedConcurrent(t *testing.T) {
	st, ctx := s.store(t)
	const procs, rounds = 16, 4
	for r := range rounds {
		claims := make([]driver.Doc, procs)
		for i := range claims {
			claims[i] = claim("k", uint64(r+1), fmt.Sprintf("n%d-%d", r, i), now(st))
		}
		errs := insertAtOnce(ctx, claims, func(ctx context.Context, c driver.Doc) error {
			dup, err := st.InsertOrdered(ctx, []driver.Doc{c, shadow(c)})
			switch {
			case err != nil:
				return err
			case dup == 0:
				return driver.ErrExists
			case dup != -1:
				return fmt.Errorf("InsertOrdered = %d, want -1 or 0", dup)
			}
			return nil
		})
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("round %d: inserts %d and %d of %s both succeeded", r, won, i, claims[i].ID)
			case err == nil:
				won = i
			case !errors.Is(err, driver.ErrExists):
				t.Errorf("round %d: insert %d: %v", r, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no insert of %s succeeded", r, claims[0].ID)
		}
		checkStored(t, ctx, st, claims[won])
		for i, c := range claims {
			if _, found := get(t, ctx, st, shadow(c).ID); found != (i == won) {
				t.Errorf("round %d: shadow of insert %d exists: %v, want %v", r, i, found, i == won)
			}
		}
	}
}

// testGetMissing: Get of an ID that does not exist is not found, without
// an error.
func (s *suite) testGetMissing(t *testing.T) {
	st, ctx := s.store(t)
	c := claim("k", 1, "n1", now(st))
	if _, found := get(t, ctx, st, c.ID); found {
		t.Errorf("Get(%s) found a document in an empty store", c.ID)
	}
	insert(t, ctx, st, c)
	for _, id := range []string{driver.ClaimID("k", 2), driver.EndID("k", 1, "n1"), driver.ShadowID("k", 1, "n1"), "k"} {
		if _, found := get(t, ctx, st, id); found {
			t.Errorf("Get(%s) found a document never inserted", id)
		}
	}
}
