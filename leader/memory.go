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

// MemoryBackend is a Backend in process memory, for unit tests of code
// that uses elections. Its leases are locks of a dsync.MemoryBackend, in
// the election namespace: take the plain locks of the code under test on
// the same backend (its MemoryBackend field), as a process does on one
// dsyncmongo backend, and they share one lease. Member status is kept
// beside them. Time comes from the time package, so tests under
// testing/synctest run on fake time.
type MemoryBackend struct {
	dsync.Backend
	*memberTable
}

// memberTable is the member status of a MemoryBackend, shared with the
// backends WithLocks returns.
type memberTable struct {
	mu      sync.Mutex
	members map[string]map[string]Member // election → id → status
}

var _ Backend = (*MemoryBackend)(nil)

// NewMemoryBackend returns an empty in-memory election backend, on a
// dsync.MemoryBackend of its own.
func NewMemoryBackend() *MemoryBackend {
	return &MemoryBackend{Backend: dsync.NewMemoryBackend(), memberTable: &memberTable{members: make(map[string]map[string]Member)}}
}

// WithLocks returns a backend with b's member status and leases on locks:
// for tests of several processes, each with a Client of its own on one
// memory store (package dsync/driver/memory), as processes share one
// database. With locks from dsync.NewMemoryBackendOn, SetReachable cuts
// off that process alone: a test can partition the leader while another
// process takes over.
func (b *MemoryBackend) WithLocks(locks dsync.Backend) *MemoryBackend {
	return &MemoryBackend{Backend: locks, memberTable: b.memberTable}
}

// SetReachable makes the backend's store unreachable (false), as a
// database that went away, or reachable again (true), as
// dsync.MemoryBackend.SetReachable does: the leader's lease cannot be
// renewed, so its term ends at its deadline (the leadership context is
// cancelled with ErrLeadershipLost), and member status can be neither
// written nor read. On a backend from WithLocks, only that backend's
// process is cut off. It panics on a backend from WithLocks whose locks
// are not a *dsync.MemoryBackend.
func (b *MemoryBackend) SetReachable(reachable bool) {
	mb, ok := b.Backend.(*dsync.MemoryBackend)
	if !ok {
		panic("leader: SetReachable needs the locks of a dsync.MemoryBackend")
	}
	mb.SetReachable(reachable)
}

// reach returns ctx's cause if it ended, or dsync.ErrUnreachable while
// the store is set unreachable.
func (b *MemoryBackend) reach(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if mb, ok := b.Backend.(*dsync.MemoryBackend); ok && !mb.Reachable() {
		return dsync.ErrUnreachable
	}
	return nil
}

// Leader implements Backend. Info.Since is when the leader's claim was
// queued.
func (b *MemoryBackend) Leader(ctx context.Context, election string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, context.Cause(ctx)
	}
	q, err := b.Client().Queue(ctx, LockKey(election))
	if err != nil {
		return Info{}, err
	}
	if len(q) == 0 {
		return Info{}, fmt.Errorf("%w in %q", ErrNoLeader, election)
	}
	l := q[0]
	b.mu.Lock()
	defer b.mu.Unlock()
	info := Info{ID: l.Owner, Token: l.Token, Since: l.QueuedAt, Host: l.Host, PID: l.PID}
	if m, ok := b.members[election][l.Owner]; ok {
		info.Version = m.Version
		// The member's status is of a later term only if the queue moved
		// on since it was read: then the term has ended, and its value
		// stays as it was.
		info.Value, info.Rev, _ = MemberValue(l.Token, m)
	}
	return info, nil
}

// PutMember implements Backend.
func (b *MemoryBackend) PutMember(ctx context.Context, election string, m Member) error {
	if err := b.reach(ctx); err != nil {
		return err
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
	if err := b.reach(ctx); err != nil {
		return nil, err
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
	if err := b.reach(ctx); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.members[election], id)
	return nil
}
