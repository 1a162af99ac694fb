package chain

import (
	"context"
	"sync"
	"time"
)

// MemStore is a Store in process memory: the in-memory backend's store,
// and the server of the simulation test. It is safe for concurrent use.
type MemStore struct {
	mu       sync.Mutex
	docs     map[string]Doc
	claims   map[string]map[uint64]struct{} // epochs of each key's claims
	floors   map[string]map[uint64]struct{} // each key's recorded floors
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
		floors:   make(map[string]map[uint64]struct{}),
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

// Insert implements Store.
func (s *MemStore) Insert(ctx context.Context, d Doc) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	if _, ok := s.docs[d.ID]; ok {
		s.mu.Unlock()
		return ErrExists
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
	s.mu.Unlock()
	if s.inserted != nil {
		s.inserted(d)
	}
	return nil
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
func (s *MemStore) Floor(ctx context.Context, key string) (uint64, error) {
	if err := live(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var top uint64
	for f := range s.floors[key] {
		top = max(top, f)
	}
	return top, nil
}

// RaiseFloor implements Store.
func (s *MemStore) RaiseFloor(ctx context.Context, key string, floor uint64) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.floors[key] == nil {
		s.floors[key] = make(map[uint64]struct{})
	}
	s.floors[key][floor] = struct{}{}
	return nil
}

// Prune implements Store.
func (s *MemStore) Prune(ctx context.Context, key string, below uint64) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, d := range s.docs {
		if d.Key == key && d.Epoch > 1 && d.Epoch < below {
			delete(s.docs, id)
			if d.Kind == KindClaim {
				delete(s.claims[key], d.Epoch)
			}
		}
	}
	for f := range s.floors[key] {
		if f > 1 && f < below {
			delete(s.floors[key], f)
		}
	}
	return nil
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

// Len returns the number of chain documents (claims and markers) stored.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.docs)
}
