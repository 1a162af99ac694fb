package leader

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryMembers is a MemberStore in process memory, for unit tests of
// code that uses elections: give it to every Election of a test
// (WithMembers), as processes share one database. Its time comes from
// the time package, so tests under testing/synctest run on fake time.
// SetReachable cuts it off, as memory.Process.SetReachable cuts off a
// Client's store.
type MemoryMembers struct {
	down atomic.Bool

	mu      sync.Mutex
	members map[string]map[string]Member // election → id → status
	// directives: election → Directive.Key → directive (memory_directives.go)
	directives map[string]map[string]Directive
}

var _ MemberStore = (*MemoryMembers)(nil)

// NewMemoryMembers returns an empty in-memory member store.
func NewMemoryMembers() *MemoryMembers {
	return &MemoryMembers{members: make(map[string]map[string]Member)}
}

// SetReachable makes the store fail every call with
// ErrMembersUnreachable (false), as a database that went away, or serve
// again (true).
func (s *MemoryMembers) SetReachable(reachable bool) { s.down.Store(!reachable) }

// reach returns ctx's cause if it ended, or ErrMembersUnreachable while
// the store is set unreachable.
func (s *MemoryMembers) reach(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if s.down.Load() {
		return ErrMembersUnreachable
	}
	return nil
}

// PutMember implements MemberStore.
func (s *MemoryMembers) PutMember(ctx context.Context, election string, m Member) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[election] == nil {
		s.members[election] = make(map[string]Member)
	}
	m.LastSeen = time.Now()
	s.members[election][m.ID] = m
	return nil
}

// Member implements MemberStore.
func (s *MemoryMembers) Member(ctx context.Context, election, id string) (Member, bool, error) {
	if err := s.reach(ctx); err != nil {
		return Member{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.members[election][id]
	return m, ok, nil
}

// Members implements MemberStore.
func (s *MemoryMembers) Members(ctx context.Context, election string, maxAge time.Duration) ([]Member, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var live []Member
	for _, m := range s.members[election] {
		if time.Since(m.LastSeen) <= maxAge {
			live = append(live, m)
		}
	}
	slices.SortFunc(live, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return live, nil
}

// DeleteMember implements MemberStore.
func (s *MemoryMembers) DeleteMember(ctx context.Context, election, id string) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.members[election], id)
	return nil
}
