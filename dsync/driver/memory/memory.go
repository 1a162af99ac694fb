// Package memory is a dsync driver that keeps its documents in process
// memory. It is for tests: it cannot coordinate separate processes.
//
// It serves unit tests of code that uses dsync
// (dsync.NewClient(memory.New())). It serves tests that run several
// Clients, as several processes would, on one shared store. Store.Process
// gives each such Client a view with switches of its own to cut it off from
// the store. A test of code that must stop using a resource when its lock
// is lost uses it with a short TTL, under testing/synctest. It also serves
// tests that count, delay or fail calls of a store (Store.Intercept).
//
// Its time is this process's monotonic clock, known exactly. Its feed
// delivers every event at once to every other Client following it. It
// imports no dsync package but the driver contract.
package memory

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Store is an in-memory driver.Store. It serves every role of the contract
// but Reads, KeyCheck, FeedPause and Loopback (Roles). It is safe for
// concurrent use. The zero value is not usable: call New. A Store is also a
// view of its documents: Intercept and Process return other views of the
// same documents, with hooks of their own.
type Store struct {
	*state
	hooks []Hook // the view's, the last one sees a call first (Intercept)
}

// state is what the views of a store share.
type state struct {
	start time.Time // carries the monotonic reading the clock counts from
	base  time.Time // start without it: the origin of the store's time

	mu        sync.Mutex
	docs      map[string]driver.Doc
	sessions  map[string]map[int]time.Time      // each session's documents: expiry by generation
	uptime    map[string]map[int]upDoc          // what RenewSessionUp wrote to them (uptime.go)
	dir       directory                         // the keys recorded (directory.go)
	hintKey   []byte                            // the hint key (peers.go)
	peers     map[string]driver.Peer            // processes that take hints, by ID
	revoked   map[string]driver.Revocation      // revocations by session (revoke.go)
	stalls    map[stallID]driver.Stall          // stall records by claim (stall.go)
	waits     map[string]map[uint64]driver.Wait // wait notes by set and number (waits.go)
	deadlocks map[string]driver.Deadlock        // deadlock records by ID (waits.go)
	outages   map[outageID]driver.Outage        // outage records by suspension (outage.go)

	feedMu    sync.Mutex
	followers map[*follower]struct{}
}

var _ driver.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	start := time.Now()
	return &Store{state: &state{
		start:     start,
		base:      start.Round(0),
		docs:      make(map[string]driver.Doc),
		sessions:  make(map[string]map[int]time.Time),
		uptime:    make(map[string]map[int]upDoc),
		followers: make(map[*follower]struct{}),
	}}
}

// Prepare implements driver.Store: nothing to prepare.
func (s *Store) Prepare(ctx context.Context) error {
	return s.do(ctx, Call{Op: "Prepare"}, func() {})
}

// ServerTime implements driver.Store: the store's time counts from its
// creation on the monotonic clock. It counts as dsync's deadlines do, so
// setting the machine's wall clock cannot make a live session look expired.
func (s *Store) ServerTime() driver.Interval {
	now := s.base.Add(time.Since(s.start))
	return driver.Interval{Earliest: now, Latest: now}
}

// Close implements driver.Store. A memory store may be shared by many
// Clients, as one database is by many processes: closing one Client
// closes the store, which keeps serving the others (each Client stops its
// own follower).
func (s *Store) Close() error { return nil }

// Roles implements driver.Store. It returns runs, maintenance, the
// directory of keys, the feed, peers, revocations, stall records, the
// record of up-time, wait notes, deadlock records and outage records,
// each through the view's hooks.
func (s *Store) Roles() driver.Roles {
	r := roles{s}
	return driver.Roles{Runs: r, Maintenance: r, Directory: r, Feed: r, Peers: r, Revocations: r, Stalls: r, Uptime: r,
		Waits: r, Deadlocks: r, Outages: r}
}

// roles serves a view's roles.
type roles struct{ s *Store }

var (
	_ driver.RunReader     = roles{}
	_ driver.Maintainer    = roles{}
	_ driver.KeyDirectory  = roles{}
	_ driver.Feed          = roles{}
	_ driver.PeerStore     = roles{}
	_ driver.RevokeStore   = roles{}
	_ driver.StallStore    = roles{}
	_ driver.UptimeStore   = roles{}
	_ driver.WaitStore     = roles{}
	_ driver.DeadlockStore = roles{}
	_ driver.OutageStore   = roles{}
)

// Insert implements driver.Store.
func (s *Store) Insert(ctx context.Context, d driver.Doc) error {
	var ok bool
	if err := s.do(ctx, Call{Op: "Insert", Write: true, Docs: []driver.Doc{d}}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ok = s.insertLocked(d)
	}); err != nil {
		return err
	}
	if !ok {
		return driver.ErrExists
	}
	return nil
}

// InsertOrdered implements driver.Store.
func (s *Store) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	dup := -1
	if err := s.do(ctx, Call{Op: "InsertOrdered", Write: true, Docs: docs}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, d := range docs {
			if !s.insertLocked(d) {
				dup = i
				return
			}
		}
	}); err != nil {
		return 0, err
	}
	return dup, nil
}

// InsertEach implements driver.Store.
func (s *Store) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	landed := make([]error, len(docs))
	if err := s.do(ctx, Call{Op: "InsertEach", Write: true, Docs: docs}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, d := range docs {
			if !s.insertLocked(d) {
				landed[i] = driver.ErrExists
			}
		}
	}); err != nil {
		errs := make([]error, len(docs)) // not landed: a late landing may write it
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return landed
}

// insertLocked stores d unless its ID exists; s.mu must be held.
func (s *state) insertLocked(d driver.Doc) bool {
	if _, ok := s.docs[d.ID]; ok {
		return false
	}
	s.docs[d.ID] = d
	return true
}

// Get implements driver.Store.
func (s *Store) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	var (
		d  driver.Doc
		ok bool
	)
	if err := s.do(ctx, Call{Op: "Get", IDs: []string{id}}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		d, ok = s.docs[id]
	}); err != nil {
		return driver.Doc{}, false, err
	}
	return d, ok, nil
}

// Delete implements driver.Store.
func (s *Store) Delete(ctx context.Context, ids []string) error {
	return s.do(ctx, Call{Op: "Delete", Write: true, IDs: ids}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, id := range ids {
			delete(s.docs, id)
		}
	})
}

// DeleteNow deletes the document with the given ID, if it exists. It is the
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
	uptime   map[string]map[int]upDoc
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
	st.uptime = cloneUptime(s.uptime)
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
	s.uptime = cloneUptime(st.uptime)
	s.dir.reset(st.keys)
}

// Reset empties the store, as dropping its collections would.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.docs)
	clear(s.sessions)
	clear(s.uptime)
	clear(s.revoked) // kept with the sessions
	clear(s.stalls)
	clear(s.waits)
	clear(s.deadlocks)
	clear(s.outages)
	s.dir.reset(nil)
}

// Unended calls f with every claim stored that has no end marker, until f
// returns false. The calls come in no order. f must not call the store.
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
