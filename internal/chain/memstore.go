package chain

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MemStore is a Store in process memory: the in-memory backend's store,
// and the server of the simulation test. It is safe for concurrent use.
type MemStore struct {
	mu       sync.Mutex
	docs     map[string]Doc
	claims   map[string]map[uint64]struct{} // epochs of each key's claims
	floors   map[string]map[uint64]floorRec // each key's recorded floors
	sessions map[string]map[int]time.Time   // each session's documents: expiry by generation
	// inserted is called, without mu held, after every successful insert
	// (the in-memory backend wakes waiters with it).
	inserted func(Doc)
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store. onInsert, if not nil, is called after
// every successful Insert, outside the store's lock.
func NewMemStore(onInsert func(Doc)) *MemStore {
	return &MemStore{
		docs:     make(map[string]Doc),
		claims:   make(map[string]map[uint64]struct{}),
		floors:   make(map[string]map[uint64]floorRec),
		sessions: make(map[string]map[int]time.Time),
		inserted: onInsert,
	}
}

func live(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// floorRec is a recorded floor: the nonce of its claim, and when it was
// sent.
type floorRec struct {
	nonce string
	sent  time.Time
}

// Insert implements Store.
func (s *MemStore) Insert(ctx context.Context, d Doc) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	ok := s.insertLocked(d)
	s.mu.Unlock()
	if !ok {
		return ErrExists
	}
	if s.inserted != nil {
		s.inserted(d)
	}
	return nil
}

// InsertOrdered implements Store.
func (s *MemStore) InsertOrdered(ctx context.Context, docs []Doc) (int, error) {
	if err := live(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	dup, n := -1, len(docs)
	for i, d := range docs {
		if !s.insertLocked(d) {
			dup, n = i, i
			break
		}
	}
	s.mu.Unlock()
	if s.inserted != nil {
		for _, d := range docs[:n] {
			s.inserted(d)
		}
	}
	return dup, nil
}

// insertLocked stores d unless its ID exists; s.mu must be held.
func (s *MemStore) insertLocked(d Doc) bool {
	if _, ok := s.docs[d.ID]; ok {
		return false
	}
	s.docs[d.ID] = d
	if d.Kind == KindClaim {
		m := s.claims[d.Key]
		if m == nil {
			m = make(map[uint64]struct{})
			s.claims[d.Key] = m
		}
		m[d.Epoch] = struct{}{}
	}
	return true
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, id string) (Doc, bool, error) {
	if err := live(ctx); err != nil {
		return Doc{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	return d, ok, nil
}

// Newest implements Store.
func (s *MemStore) Newest(ctx context.Context, key string) (Doc, bool, error) {
	if err := live(ctx); err != nil {
		return Doc{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var top uint64
	for e := range s.claims[key] {
		top = max(top, e)
	}
	if top == 0 {
		return Doc{}, false, nil
	}
	return s.docs[ClaimID(key, top)], true, nil
}

// Floor implements Store.
func (s *MemStore) Floor(ctx context.Context, key string, below uint64) (Floor, bool, error) {
	if err := live(ctx); err != nil {
		return Floor{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var top Floor
	for f, r := range s.floors[key] {
		if (below == 0 || f < below) && f > top.Epoch {
			top = Floor{Epoch: f, Nonce: r.nonce}
		}
	}
	return top, top.Epoch > 0, nil
}

// RaiseFloor implements Store.
func (s *MemStore) RaiseFloor(ctx context.Context, key string, f Floor, sent time.Time) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.floors[key] == nil {
		s.floors[key] = make(map[uint64]floorRec)
	}
	if _, ok := s.floors[key][f.Epoch]; !ok {
		s.floors[key][f.Epoch] = floorRec{nonce: f.Nonce, sent: sent}
	}
	return nil
}

// Prune implements Store.
func (s *MemStore) Prune(ctx context.Context, key string, below uint64, sentBefore time.Time) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.pruneSetLocked(key, below, sentBefore) {
		s.deleteLocked(id)
	}
	return nil
}

// PruneSet returns the IDs of the documents Prune(key, below, sentBefore)
// would delete now: a store whose deletes are not atomic reads this set
// first and deletes its members later (the simulation does).
func (s *MemStore) PruneSet(key string, below uint64, sentBefore time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pruneSetLocked(key, below, sentBefore)
}

// Delete deletes the document (or floor, by FloorID) with the given ID,
// if it exists.
func (s *MemStore) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(id)
}

// FloorID names a floor for PruneSet and Delete.
func FloorID(key string, floor uint64) string {
	return key + "#floor#" + strconv.FormatUint(floor, 10)
}

func (s *MemStore) pruneSetLocked(key string, below uint64, sentBefore time.Time) []string {
	var ids []string
	for id, d := range s.docs {
		if d.Key == key && d.Epoch > 1 && d.Epoch < below && d.Sent.Before(sentBefore) {
			ids = append(ids, id)
		}
	}
	for f, r := range s.floors[key] {
		if f > 1 && f < below && r.sent.Before(sentBefore) {
			ids = append(ids, FloorID(key, f))
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *MemStore) deleteLocked(id string) {
	if d, ok := s.docs[id]; ok {
		delete(s.docs, id)
		if d.Kind == KindClaim {
			delete(s.claims[d.Key], d.Epoch)
		}
		return
	}
	for key, fs := range s.floors {
		for f := range fs {
			if FloorID(key, f) == id {
				delete(fs, f)
				return
			}
		}
	}
}

// MemState is a copy of a MemStore's contents (Snapshot).
type MemState struct {
	docs     map[string]Doc
	floors   map[string]map[uint64]floorRec
	sessions map[string]map[int]time.Time
}

// Snapshot copies the store's contents, as a backup would.
func (s *MemStore) Snapshot() MemState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := MemState{docs: maps.Clone(s.docs), floors: make(map[string]map[uint64]floorRec), sessions: make(map[string]map[int]time.Time)}
	for k, fs := range s.floors {
		st.floors[k] = maps.Clone(fs)
	}
	for id, gens := range s.sessions {
		st.sessions[id] = maps.Clone(gens)
	}
	return st
}

// Restore replaces the store's contents with a snapshot's, as restoring a
// backup would.
func (s *MemStore) Restore(st MemState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs = maps.Clone(st.docs)
	clear(s.claims)
	for _, d := range s.docs {
		if d.Kind == KindClaim {
			if s.claims[d.Key] == nil {
				s.claims[d.Key] = make(map[uint64]struct{})
			}
			s.claims[d.Key][d.Epoch] = struct{}{}
		}
	}
	s.floors = make(map[string]map[uint64]floorRec)
	for k, fs := range st.floors {
		s.floors[k] = maps.Clone(fs)
	}
	s.sessions = make(map[string]map[int]time.Time)
	for id, gens := range st.sessions {
		s.sessions[id] = maps.Clone(gens)
	}
}

// Reset empties the store, as dropping its collections would.
func (s *MemStore) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.docs)
	clear(s.claims)
	clear(s.floors)
	clear(s.sessions)
}

// InsertSession implements Store.
func (s *MemStore) InsertSession(ctx context.Context, sess Session) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gens := s.sessions[sess.ID]
	if gens == nil {
		gens = make(map[int]time.Time)
		s.sessions[sess.ID] = gens
	}
	if _, ok := gens[sess.Gen]; ok {
		return ErrExists
	}
	gens[sess.Gen] = sess.ExpiresAt
	return nil
}

// RenewSession implements Store.
func (s *MemStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if err := live(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.sessions[id][gen]
	if !ok {
		return false, nil
	}
	if expires.After(old) {
		s.sessions[id][gen] = expires
	}
	return true, nil
}

// GetSession implements Store.
func (s *MemStore) GetSession(ctx context.Context, id string) (Session, bool, error) {
	if err := live(ctx); err != nil {
		return Session{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, found := LatestGen(id, s.sessions[id])
	return sess, found, nil
}

// LatestGen returns the document of session id with the highest expiry,
// given the expiry of each of its generations.
func LatestGen(id string, gens map[int]time.Time) (Session, bool) {
	var best Session
	found := false
	for gen, exp := range gens {
		if !found || exp.After(best.ExpiresAt) {
			best, found = Session{ID: id, Gen: gen, ExpiresAt: exp}, true
		}
	}
	return best, found
}

// Unended calls f with every claim stored that has no end marker, in no
// order, until f returns false. f must not call the store.
func (s *MemStore) Unended(f func(Doc) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, epochs := range s.claims {
		for epoch := range epochs {
			d := s.docs[ClaimID(key, epoch)]
			if _, ended := s.docs[EndID(key, epoch, d.Nonce)]; !ended && !f(d) {
				return
			}
		}
	}
}

// Len returns the number of chain documents (claims and markers) stored.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.docs)
}
