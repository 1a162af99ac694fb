package leader

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// MemoryBackend is a Backend in process memory, for unit tests of code that
// uses elections. Its leases follow dsync.MemoryBackend, in a store of their
// own: take the plain locks of the code under test on a
// dsync.MemoryBackend, as it takes them on a dsyncmongo backend beside
// leadermongo's, and no lock excludes an election whatever its name. Member
// status and terms are kept beside the leases. Time comes from the time
// package, so tests under testing/synctest run on fake time.
type MemoryBackend struct {
	*dsync.MemoryBackend

	mu      sync.Mutex
	since   map[string]termStart         // by key: when its newest term began
	members map[string]map[string]Member // election → id → status
}

type termStart struct {
	token uint64
	at    time.Time
}

var _ Backend = (*MemoryBackend)(nil)

// NewMemoryBackend returns an empty in-memory election backend.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{
		MemoryBackend: dsync.NewMemoryBackend(),
		since:         make(map[string]termStart),
		members:       make(map[string]map[string]Member),
	}
}

// Claim implements dsync.Backend, recording when a term began if the
// claim holds at once (try).
func (b *MemoryBackend) Claim(ctx context.Context, key, owner, session string, try bool) (dsync.Claim, error) {
	c, err := b.MemoryBackend.Claim(ctx, key, owner, session, try)
	if err == nil && try {
		b.began(c)
	}
	return c, err
}

// Await implements dsync.Backend, recording when each term began.
func (b *MemoryBackend) Await(ctx context.Context, c dsync.Claim) error {
	err := b.MemoryBackend.Await(ctx, c)
	if err == nil {
		b.began(c)
	}
	return err
}

func (b *MemoryBackend) began(c dsync.Claim) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since[c.Key] = termStart{token: c.Token, at: time.Now()}
}

// Leader implements Backend.
func (b *MemoryBackend) Leader(ctx context.Context, election string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, context.Cause(ctx)
	}
	l, ok := b.Holder(LockKey(election))
	if !ok {
		return Info{}, fmt.Errorf("%w in %q", ErrNoLeader, election)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	info := Info{ID: l.Owner, Token: l.Token}
	if st := b.since[l.Key]; st.token == l.Token {
		info.Since = st.at
	}
	if m, ok := b.members[election][l.Owner]; ok {
		info.Host, info.PID, info.Version = m.Host, m.PID, m.Version
	}
	return info, nil
}

// PutMember implements Backend.
func (b *MemoryBackend) PutMember(ctx context.Context, election string, m Member) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.members[election] == nil {
		b.members[election] = make(map[string]Member)
	}
	m.LastSeen = time.Now()
	b.members[election][m.ID] = m
	return nil
}

// Members implements Backend.
func (b *MemoryBackend) Members(ctx context.Context, election string, maxAge time.Duration) ([]Member, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var live []Member
	for _, m := range b.members[election] {
		if time.Since(m.LastSeen) <= maxAge {
			live = append(live, m)
		}
	}
	slices.SortFunc(live, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return live, nil
}

// DeleteMember implements Backend.
func (b *MemoryBackend) DeleteMember(ctx context.Context, election, id string) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.members[election], id)
	return nil
}
