package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// laneDoc returns a document of kind of the lane rooted at root, in slot.
func laneDoc(root driver.Doc, kind string, slot uint64, sent time.Time) driver.Doc {
	d := driver.Doc{Key: root.Key, Epoch: root.Epoch, Kind: kind, Nonce: root.Nonce,
		Session: root.Session, Slot: slot, Sent: sent}
	switch kind {
	case driver.KindSlotShadow:
		d.ID = driver.SlotShadowID(root.Key, root.Epoch, root.Nonce, slot)
	case driver.KindSlotEnd, driver.KindSlotDead:
		d.ID = driver.SlotEndID(root.Key, root.Epoch, root.Nonce, slot)
	default: // a slot or a seal: the slot's own ID
		d.ID = driver.SlotID(root.Key, root.Epoch, root.Nonce, slot)
	}
	return d
}

// lane returns a root claim of key at epoch and its lane: slots 1 to
// slots with their shadows, each ended but the last (the second by a
// writer that proved its session expired), and a seal in the slot after
// them.
func lane(key string, epoch uint64, nonce string, slots uint64, sent time.Time) (root driver.Doc, docs []driver.Doc) {
	root = claim(key, epoch, nonce, sent)
	root.Mode, root.Weight, root.Limit, root.Lane = driver.Shared, 1, 0, true
	docs = []driver.Doc{root, shadow(root)}
	for i := uint64(1); i <= slots; i++ {
		docs = append(docs, laneDoc(root, driver.KindSlot, i, sent), laneDoc(root, driver.KindSlotShadow, i, sent))
		switch {
		case i == 2:
			docs = append(docs, laneDoc(root, driver.KindSlotDead, i, sent))
		case i < slots:
			docs = append(docs, laneDoc(root, driver.KindSlotEnd, i, sent))
		}
	}
	seal := laneDoc(root, driver.KindSeal, slots+1, sent)
	seal.Session, seal.SealEpoch, seal.SealNonce = "s0000000000000000002", epoch+1<<20, "n-writer"
	return root, append(docs, seal)
}

// testLaneDocs: a read lane's documents keep every field, many of one
// kind and epoch side by side (a unique index on key, kind and epoch
// would refuse them); a seal and a read hold of one slot are one ID, of
// which the first insert stands; a root's end marker keeps its lane's
// last slot.
func (s *suite) testLaneDocs(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	root, docs := lane("k", 1<<40, "n1", 4, sent)
	docs = append(docs, end(root, driver.KindRelease, sent.Add(time.Second)))
	docs[len(docs)-1].Slot = 4 // the lane's last slot (driver.Doc.Slot)
	insert(t, ctx, st, docs...)
	for _, d := range docs {
		checkStored(t, ctx, st, d)
	}

	// The slot a seal took, inserted as a read hold (one that lands
	// late): refused, the seal as it was; and a seal of a slot a read
	// hold took, refused likewise.
	seal := docs[len(docs)-2]
	for _, d := range []driver.Doc{seal, docs[2]} {
		other := laneDoc(root, driver.KindSlot, d.Slot, sent.Add(time.Hour))
		if d.Kind == driver.KindSlot {
			other = laneDoc(root, driver.KindSeal, d.Slot, sent.Add(time.Hour))
			other.SealEpoch, other.SealNonce = 7, "n-late"
		}
		if err := st.Insert(ctx, other); !errors.Is(err, driver.ErrExists) {
			t.Errorf("Insert of a %s in %s, which holds a %s: %v, want ErrExists", other.Kind, d.ID, d.Kind, err)
		}
		checkStored(t, ctx, st, d)
	}

	// A read hold chained on the slot below (the slot, its shadow, then
	// the shadow below again), as InsertOrdered sends it: stops at the
	// duplicate, the two before it stored.
	next := []driver.Doc{laneDoc(root, driver.KindSlot, 6, sent), laneDoc(root, driver.KindSlotShadow, 6, sent), docs[3]}
	if dup, err := st.InsertOrdered(ctx, next); err != nil || dup != 2 {
		t.Errorf("InsertOrdered(slot 6, its shadow, slot 1's shadow) = %d, %v; want 2, nil", dup, err)
	}
	for _, d := range next {
		checkStored(t, ctx, st, d)
	}
}
