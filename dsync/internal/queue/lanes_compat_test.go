package queue_test

import (
	"context"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// laneRootStore marks the claims of one owner as roots of read lanes
// (driver.Doc.Lane), as a dsync that keeps lanes would insert them.
type laneRootStore struct {
	queue.Store
	owner string
}

func (s laneRootStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	docs = append([]driver.Doc(nil), docs...)
	for i, d := range docs {
		if d.Kind == driver.KindClaim && d.Owner == s.owner {
			docs[i].Lane = true
		}
	}
	return s.Store.InsertOrdered(ctx, docs)
}

// laneOf inserts a lane under root as its process would have kept it:
// slots 1 to 3 with their shadows, the first two ended, the third held.
func laneOf(t *testing.T, st queue.Store, root *queue.Claim) {
	t.Helper()
	doc := func(kind, id string, slot uint64) driver.Doc {
		return driver.Doc{ID: id, Key: root.Key, Epoch: root.Epoch, Kind: kind, Nonce: root.Nonce,
			Session: root.Session, Slot: slot}
	}
	k, e, n := root.Key, root.Epoch, root.Nonce
	for slot := uint64(1); slot <= 3; slot++ {
		docs := []driver.Doc{doc(driver.KindSlot, driver.SlotID(k, e, n, slot), slot),
			doc(driver.KindSlotShadow, driver.SlotShadowID(k, e, n, slot), slot)}
		if slot < 3 {
			docs = append(docs, doc(driver.KindSlotEnd, driver.SlotEndID(k, e, n, slot), slot))
		}
		if dup, err := st.InsertOrdered(context.Background(), docs); err != nil || dup != -1 {
			t.Fatalf("inserting slot %d: %d, %v", slot, dup, err)
		}
	}
}

// A dsync that keeps no read lanes (this one) sees a lane's root as the
// live shared claim it is, whatever of its lane is stored (slots ended
// and held, their shadows, under the root's epoch and nonce), until the
// root's own end marker: a writer of this version waits behind it, a
// reader passes it, and neither takes a slot's end for the root's. The
// driver package's documentation of the lane's kinds promises it.
func TestLaneOfANewerDsyncIsALiveSharedClaim(t *testing.T) {
	for _, runs := range []bool{true, false} {
		var st queue.Store = memory.New()
		if !runs {
			st = &byIDStore{Store: st}
		}
		g := grantRig{t, st}
		g.store = laneRootStore{st, "lane"}
		eL, root := g.claim("lane", shared)
		g.store = st
		if stored, _, _ := st.Get(context.Background(), queue.ClaimID("k", root.Epoch)); !stored.Lane {
			t.Fatal("the root was not stored as a lane's")
		}
		if !g.holds(eL, root) {
			t.Fatal("a lane's root does not hold on an empty key")
		}
		laneOf(t, st, root)

		e2, r2 := g.claim("r2", shared)
		ew, w := g.claim("w", excl)
		e3, r3 := g.claim("r3", shared)
		if !g.holds(e2, r2) {
			t.Fatalf("runs %v: a reader does not pass a lane's root", runs)
		}
		g.release(e2, r2)
		if g.holds(ew, w) {
			t.Fatalf("runs %v: a writer holds while a lane's root is live, its lane's ended slots in the store", runs)
		}
		if g.holds(e3, r3) {
			t.Fatalf("runs %v: a reader passed a waiting writer", runs)
		}
		g.release(eL, root)
		if !g.holds(ew, w) {
			t.Fatalf("runs %v: a writer does not hold once the lane's root ended", runs)
		}
		g.release(ew, w)
		if !g.holds(e3, r3) {
			t.Fatalf("runs %v: a reader does not hold after the writer released", runs)
		}
	}
}
