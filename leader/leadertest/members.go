package leadertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// ErrUnreachable is what a MemoryMembers returns while it is set
// unreachable.
var ErrUnreachable = errors.New("leadertest: the member store is unreachable (MemoryMembers.SetReachable)")

// MemoryMembers is a leader.MemberStore in process memory. The zero value
// is not usable: call NewMemoryMembers.
type MemoryMembers struct {
	down atomic.Bool

	mu      sync.Mutex
	members map[string]map[string]leader.Member // election → id → status
	// directives: election → Directive.Key → directive (directives.go)
	directives map[string]map[string]operator.Directive
}

var _ leader.MemberStore = (*MemoryMembers)(nil)

// NewMemoryMembers returns an empty in-memory member store.
func NewMemoryMembers() *MemoryMembers {
	return &MemoryMembers{members: make(map[string]map[string]leader.Member)}
}

// SetReachable(false) makes every call fail with ErrUnreachable, as a
// database that went away. SetReachable(true) makes it serve again.
func (s *MemoryMembers) SetReachable(reachable bool) { s.down.Store(!reachable) }

// reach returns ctx's cause if it ended, or ErrUnreachable while the
// store is set unreachable.
func (s *MemoryMembers) reach(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if s.down.Load() {
		return ErrUnreachable
	}
	return nil
}

// PutMember implements leader.MemberStore.
func (s *MemoryMembers) PutMember(ctx context.Context, election string, m leader.Member) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[election] == nil {
		s.members[election] = make(map[string]leader.Member)
	}
	m.LastSeen = time.Now()
	s.members[election][m.ID] = m
	return nil
}

// Member implements leader.MemberStore.
func (s *MemoryMembers) Member(ctx context.Context, election, id string) (leader.Member, bool, error) {
	if err := s.reach(ctx); err != nil {
		return leader.Member{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.members[election][id]
	return m, ok, nil
}

// Members implements leader.MemberStore.
func (s *MemoryMembers) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	if err := s.reach(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var live []leader.Member
	for _, m := range s.members[election] {
		if time.Since(m.LastSeen) <= maxAge {
			live = append(live, m)
		}
	}
	slices.SortFunc(live, func(a, b leader.Member) int { return strings.Compare(a.ID, b.ID) })
	return live, nil
}

// DeleteMember implements leader.MemberStore.
func (s *MemoryMembers) DeleteMember(ctx context.Context, election, id string) error {
	if err := s.reach(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.members[election], id)
	return nil
}
