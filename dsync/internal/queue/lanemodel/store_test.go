package lanemodel

import (
	"fmt"
	"slices"
)

// idKind says which document of the protocol an ID names.
type idKind uint8

const (
	claimID    idKind = iota // key@E: a claim of the key's main sequence
	markID                   // key@E~: the end marker of claim E
	slotID                   // key@E/<nonce>/i: slot i of the lane rooted at claim E
	slotMarkID               // key@E/<nonce>/i~: the end marker of the read hold in slot i
	shadowID                 // key@E/<nonce>/i#: slot i's shadow, inserted with it, never sent again
)

// An id names one document. The lane's IDs carry the root claim's nonce in
// the protocol; the model has one history of the store, where the epoch
// alone names the root.
type id struct {
	kind  idKind
	epoch int
	slot  int
}

func (i id) String() string {
	switch i.kind {
	case claimID:
		return fmt.Sprintf("@%d", i.epoch)
	case markID:
		return fmt.Sprintf("@%d~", i.epoch)
	case slotID:
		return fmt.Sprintf("@%d/%d", i.epoch, i.slot)
	case shadowID:
		return fmt.Sprintf("@%d/%d#", i.epoch, i.slot)
	default:
		return fmt.Sprintf("@%d/%d~", i.epoch, i.slot)
	}
}

// A doc is what the store holds under an ID.
type doc struct {
	owner int   // the actor that inserted it
	excl  bool  // a claim: exclusive (a writer's); otherwise a lane's root
	seal  bool  // a slot: a writer's seal, not a read hold
	by    int   // a seal: the epoch of the writer's claim that sealed
	after uint8 // a lane's root: the writers whose claims were stored when it landed (bit per actor)
}

// A put is one document of an insert.
type put struct {
	id  id
	doc doc
}

// A result is what the store answered for one document of an ordered
// insert.
type result uint8

const (
	notTried result = iota // after a failure, an ordered insert stops
	inserted
	duplicate
)

// store is the coordinator: documents by ID, inserted only, never
// updated or deleted (the insert-only rule).
type store map[id]doc

func (s store) clone() store {
	c := make(store, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

// insertOne applies one document of an ordered insert. The model applies
// an ordered insert's documents one step at a time, stopping at the first
// duplicate ID, as MongoDB's ordered insertMany does: it is not atomic,
// and another request may land between two of its documents.
func (s store) insertOne(p put) result {
	if _, ok := s[p.id]; ok {
		return duplicate
	}
	s[p.id] = p.doc
	return inserted
}

func (s store) has(i id) bool {
	_, ok := s[i]
	return ok
}

func (s store) key() string {
	ids := make([]id, 0, len(s))
	for i := range s {
		ids = append(ids, i)
	}
	slices.SortFunc(ids, func(a, b id) int {
		if a.epoch != b.epoch {
			return a.epoch - b.epoch
		}
		if a.slot != b.slot {
			return a.slot - b.slot
		}
		return int(a.kind) - int(b.kind)
	})
	b := make([]byte, 0, 6*len(ids))
	for _, i := range ids {
		d := s[i]
		b = append(b, byte(i.kind), byte(i.epoch), byte(i.slot), byte(d.owner), byte(d.by), flag(d.excl)|flag(d.seal)<<1, d.after)
	}
	return string(b)
}
