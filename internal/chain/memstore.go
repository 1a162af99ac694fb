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
	floors   map[string]uint64
	sessions map[string]Session
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
		floors:   make(map[string]uint64),
		sessions: make(map[string]Session),
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
	return s.floors[key], nil
}

// RaiseFloor implements Store.
func (s *MemStore) RaiseFloor(ctx context.Context, key string, floor uint64) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.floors[key] = max(s.floors[key], floor)
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
	return nil
}

// InsertSession implements Store.
func (s *MemStore) InsertSession(ctx context.Context, sess Session) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess.ID]; ok {
		return ErrExists
	}
	s.sessions[sess.ID] = sess
	return nil
}

// RenewSession implements Store.
func (s *MemStore) RenewSession(ctx context.Context, id string, expires time.Time) (bool, error) {
	if err := live(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return false, nil
	}
	if expires.After(sess.ExpiresAt) {
		sess.ExpiresAt = expires
		s.sessions[id] = sess
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
	sess, ok := s.sessions[id]
	return sess, ok, nil
}

// Len returns the number of chain documents (claims and markers) stored.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.docs)
}
