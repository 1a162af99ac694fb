package dsync

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// countedReads is a store that counts every read a process sends to it
// (by ID, of sessions, and of runs), for the tests that count what a
// handoff reads. With a delay, its every read and insert takes that long
// (in a synctest bubble, fake time); with noRuns, it reads by ID only, as
// dsync/mongo on FerretDB.
type countedReads struct {
	driver.Store
	delay  time.Duration
	noRuns bool
	mu     sync.Mutex
	n      int
}

// slowReads is a countedReads that reads by ID only and whose every
// request takes a millisecond.
func slowReads() *countedReads {
	return &countedReads{delay: time.Millisecond, noRuns: true}
}

// take returns the reads counted since the last take.
func (s *countedReads) take() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = 0
	return n
}

func (s *countedReads) read() {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
}

func (s *countedReads) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	s.read()
	return s.Store.Get(ctx, id)
}

func (s *countedReads) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	s.read()
	return s.Store.GetSession(ctx, id)
}

// Roles are the store's, with runs read through s.
func (s *countedReads) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Runs = s
	return r
}

func (s *countedReads) GetRun(ctx context.Context, key string, from, to uint64) ([]driver.Doc, error) {
	if s.noRuns {
		return nil, driver.ErrRunsUnsupported
	}
	s.read()
	return s.Store.Roles().Runs.GetRun(ctx, key, from, to)
}

func (s *countedReads) Insert(ctx context.Context, d driver.Doc) error {
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	return s.Store.Insert(ctx, d)
}
