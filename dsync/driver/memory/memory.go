// Package memory is a dsync driver that keeps its documents in process
// memory: for unit tests of code that uses dsync
// (dsync.NewClient(memory.New())), and for tests that run several
// Clients, as several processes would, on one shared store (Store.Process
// gives each such Client a view with switches of its own to cut it off
// from the store). Its time is this process's monotonic clock, known
// exactly. Its feed delivers every event at once to every other Client
// following it. It imports no dsync package but the driver contract.
package memory

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Store is an in-memory driver.Store and driver.Feed. It is safe for
// concurrent use. The zero value is not usable: call New.
type Store struct {
	start time.Time // carries the monotonic reading the clock counts from
	base  time.Time // start without it: the origin of the store's time

	mu       sync.Mutex
	docs     map[string]driver.Doc
	sessions map[string]map[int]time.Time // each session's documents: expiry by generation
	dir      directory                    // the keys recorded (directory.go)
	hintKey  []byte                       // the hint key (peers.go)
	peers    map[string]driver.Peer       // processes that take hints, by ID
	revoked  map[string]driver.Revocation // revocations by session (revoke.go)

	feedMu    sync.Mutex
	followers map[*follower]struct{}
}

var (
	_ driver.Store = (*Store)(nil)
	_ driver.Feed  = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	start := time.Now()
	return &Store{
		start:     start,
		base:      start.Round(0),
		docs:      make(map[string]driver.Doc),
		sessions:  make(map[string]map[int]time.Time),
		followers: make(map[*follower]struct{}),
	}
}

// Prepare implements driver.Store: nothing to prepare.
func (s *Store) Prepare(ctx context.Context) error { return live(ctx) }

// ServerTime implements driver.Store: the store's time counts from its
// creation on the monotonic clock, as dsync's deadlines do, so setting the
// machine's wall clock cannot make a live session look expired.
func (s *Store) ServerTime() driver.Interval {
	now := s.base.Add(time.Since(s.start))
	return driver.Interval{Earliest: now, Latest: now}
}

// Close implements driver.Store. A memory store may be shared by many
// Clients, as one database is by many processes: closing one Client
// closes the store, which keeps serving the others (each Client stops its
// own follower).
func (s *Store) Close() error { return nil }

func live(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// Insert implements driver.Store.
func (s *Store) Insert(ctx context.Context, d driver.Doc) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.insertLocked(d) {
		return driver.ErrExists
	}
	return nil
}

// InsertOrdered implements driver.Store.
func (s *Store) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	if err := live(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range docs {
		if !s.insertLocked(d) {
			return i, nil
		}
	}
	return -1, nil
}

// InsertEach implements driver.Store.
func (s *Store) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	errs := make([]error, len(docs))
	if err := live(ctx); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range docs {
		if !s.insertLocked(d) {
			errs[i] = driver.ErrExists
		}
	}
	return errs
}

// insertLocked stores d unless its ID exists; s.mu must be held.
func (s *Store) insertLocked(d driver.Doc) bool {
	if _, ok := s.docs[d.ID]; ok {
		return false
	}
	s.docs[d.ID] = d
	return true
}

// Get implements driver.Store.
func (s *Store) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	if err := live(ctx); err != nil {
		return driver.Doc{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	return d, ok, nil
}

// Delete implements driver.Store.
func (s *Store) Delete(ctx context.Context, ids []string) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.docs, id)
	}
	return nil
}

// RecentKeys implements driver.Store.
func (s *Store) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	if err := live(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := make(map[string]bool)
	for _, d := range s.docs {
		if d.Kind == driver.KindGate && d.Bucket >= from {
			set[d.Key] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// Compact implements driver.Store.
func (s *Store) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	if err := live(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.compactSetLocked(sentBefore, keep)
	for _, id := range ids {
		delete(s.docs, id)
	}
	return int64(len(ids)), nil
}

// CompactSet returns the IDs of the documents Compact(sentBefore, keep)
// would delete now: a store whose deletes are not atomic reads this set
// first and deletes its members later (the simulation does).
func (s *Store) CompactSet(sentBefore time.Time, keep []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compactSetLocked(sentBefore, keep)
}

func (s *Store) compactSetLocked(sentBefore time.Time, keep []string) []string {
	kept := make(map[string]bool, len(keep))
	for _, k := range keep {
		kept[k] = true
	}
	var ids []string
	for id, d := range s.docs {
		if d.Kind == driver.KindDone && (d.Exp.IsZero() || !d.Exp.Before(sentBefore)) {
			continue // a done record goes only once its expiry passed
		}
		if !kept[d.Key] && d.Kind != driver.KindProtocol && d.Sent.Before(sentBefore) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// DropGates implements driver.Store.
func (s *Store) DropGates(ctx context.Context, below int64, sentBefore time.Time) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, d := range s.docs {
		if d.Kind == driver.KindGate && d.Bucket < below && d.Sent.Before(sentBefore) {
			delete(s.docs, id)
		}
	}
	return nil
}

// DeleteNow deletes the document with the given ID, if it exists: the
// second half of a delete applied as a read and a later delete (the
// simulation tears the store's deletes so).
func (s *Store) DeleteNow(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, id)
}

// State is a copy of a Store's contents (Snapshot).
type State struct {
	docs     map[string]driver.Doc
	sessions map[string]map[int]time.Time
	keys     []string
}

// Snapshot copies the store's contents, as a backup would.
func (s *Store) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{docs: maps.Clone(s.docs), sessions: make(map[string]map[int]time.Time), keys: s.dir.all()}
	for id, gens := range s.sessions {
		st.sessions[id] = maps.Clone(gens)
	}
	return st
}

// Restore replaces the store's contents with a snapshot's, as restoring a
// backup would.
func (s *Store) Restore(st State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs = maps.Clone(st.docs)
	s.sessions = make(map[string]map[int]time.Time)
	for id, gens := range st.sessions {
		s.sessions[id] = maps.Clone(gens)
	}
	s.dir.reset(st.keys)
}

// Reset empties the store, as dropping its collections would.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.docs)
	clear(s.sessions)
	clear(s.revoked) // kept with the sessions
	s.dir.reset(nil)
}

// Unended calls f with every claim stored that has no end marker, in no
// order, until f returns false. f must not call the store.
func (s *Store) Unended(f func(driver.Doc) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.docs {
		if d.Kind != driver.KindClaim {
			continue
		}
		if _, ended := s.docs[driver.EndID(d.Key, d.Epoch, d.Nonce)]; !ended && !f(d) {
			return
		}
	}
}

// Each calls f with the key of every document stored, in no order. f
// must not call the store.
func (s *Store) Each(f func(key string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.docs {
		f(d.Key)
	}
}

// Len returns the number of documents stored (claims, shadows, markers).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.docs)
}
