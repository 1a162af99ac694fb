package dsyncmongo

import "go.mongodb.org/mongo-driver/v2/bson"

// maxRecent bounds the event IDs a recentIDs remembers: more than a
// capped events collection holds on MongoDB (eventsMaxDocs), so that a
// reopened cursor's replay of it is recognised in full.
const maxRecent = 2 * eventsMaxDocs

// recentIDs remembers the last maxRecent IDs added. It is used by one
// goroutine (the tailer's).
type recentIDs struct {
	set   map[bson.ObjectID]struct{}
	order []bson.ObjectID // oldest first
}

// has reports whether id was added (and not yet forgotten).
func (r *recentIDs) has(id bson.ObjectID) bool {
	_, ok := r.set[id]
	return ok
}

// add records id and reports whether it is new.
func (r *recentIDs) add(id bson.ObjectID) bool {
	if _, ok := r.set[id]; ok {
		return false
	}
	if r.set == nil {
		r.set = make(map[bson.ObjectID]struct{})
	}
	if len(r.order) >= maxRecent {
		drop := r.order[:maxRecent/2]
		for _, old := range drop {
			delete(r.set, old)
		}
		r.order = append(r.order[:0], r.order[maxRecent/2:]...)
	}
	r.set[id] = struct{}{}
	r.order = append(r.order, id)
	return true
}
