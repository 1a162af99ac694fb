package apisim

import (
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// sessions is the store's sessions collection, kept apart from the memory
// store's documents so that the operator can empty it alone, as
// docs/operations.md allows "at any time ... at most once in three TTLs".
type sessions struct {
	mu   sync.Mutex
	gens map[string]map[int]time.Time // expiry by session and generation
	ups  map[string]map[int]upDoc     // the record of up-time by session and generation (store_uptime.go)
}

func newSessions() *sessions {
	return &sessions{gens: make(map[string]map[int]time.Time), ups: make(map[string]map[int]upDoc)}
}

func (s *sessions) insert(sess driver.Session, marked bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gens[sess.ID]
	if g == nil {
		g = make(map[int]time.Time)
		s.gens[sess.ID] = g
	}
	if _, ok := g[sess.Gen]; ok {
		return driver.ErrExists
	}
	g[sess.Gen] = sess.ExpiresAt
	if marked { // InsertSessionUp: a record-keeper's, with no record yet
		if s.ups[sess.ID] == nil {
			s.ups[sess.ID] = make(map[int]upDoc)
		}
		s.ups[sess.ID][sess.Gen] = upDoc{}
	}
	return nil
}

// renew raises the expiry of a generation (never lowers it); it reports
// whether the generation exists.
func (s *sessions) renew(id string, gen int, expires time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.gens[id][gen]
	if ok && expires.After(old) {
		s.gens[id][gen] = expires
	}
	return ok
}

func (s *sessions) has(id string, gen int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.gens[id][gen]
	return ok
}

func (s *sessions) get(id string) (driver.Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return memory.LatestGen(id, s.gens[id])
}

// empty empties the collection, as an operator would.
func (s *sessions) empty() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.gens)
	clear(s.ups)
}
