package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// byIDStore is a store that reads by ID only (no runs, as the MongoDB
// driver on FerretDB), counting its reads of claims by ID.
type byIDStore struct {
	queue.Store
	gets int
}

func (s *byIDStore) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Runs = nil
	return r
}

func (s *byIDStore) Get(ctx context.Context, id string) (queue.Doc, bool, error) {
	s.gets++
	return s.Store.Get(ctx, id)
}

// A claim that lost maxDups epochs in a row to other processes looks for
// where the queue ends from the last epoch it lost, which exists: a few
// reads, however many epochs its segment holds below (issue 44: it used
// to gallop up from the segment's first epoch, two reads for every
// doubling of the epochs, each cycle of several readers that lost four).
func TestLostEpochsClimbFromTheLastLost(t *testing.T) {
	ctx := context.Background()
	store := &byIDStore{Store: memory.New()}
	engine := func() (*queue.Engine, string) {
		e, err := queue.New(store, fixedClock{}, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return e, sess
	}
	cycle := func(e *queue.Engine, sess, owner string, end bool) *queue.Claim {
		t.Helper()
		c, err := e.Claim(ctx, "k", owner, sess, shared, false)
		if err != nil {
			t.Fatal(err)
		}
		if head, _, err := e.Walk(ctx, c); err != nil || !head {
			t.Fatalf("%s: Walk = %v, %v; want it holding", owner, head, err)
		}
		if end {
			if err := e.End(ctx, c, true); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	me, mySess := engine()
	var last *queue.Claim
	for range 300 { // a long history, on one reader's own releases
		last = cycle(me, mySess, "me", true)
	}
	other, otherSess := engine()
	for range 5 { // five live readers above my last release
		cycle(other, otherSess, "other", false)
	}
	before := store.gets
	c, err := me.Claim(ctx, "k", "me", mySess, shared, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := last.Epoch + 6; c.Epoch != want {
		t.Errorf("the claim took epoch %d, want %d (right above the other readers')", c.Epoch, want)
	}
	// Four epochs lost (last+1 to last+4), then the reads of last+5
	// (found), last+7 and last+6 (missing).
	if reads := store.gets - before; reads > 3 {
		t.Errorf("the claim read %d documents by ID after losing four epochs, want at most 3", reads)
	}
	if head, _, err := me.Walk(ctx, c); err != nil || !head {
		t.Fatalf("Walk = %v, %v; want it holding beside the live readers", head, err)
	}
}
