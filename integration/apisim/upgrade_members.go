package apisim

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// upgradeMembers is a candidate's view of the member status: it reaches
// nothing while its process is paused or cut off from the store. It
// tells the run which writes and removals landed, and serves the version
// rule's pre-term gate through leader.ConfirmedMembers (the memory store
// confirms every write it applies). A paused process's calls fail rather
// than wait for its resume, unlike its requests to the store
// (procStore.request): the Election writes its status under a lock that
// its heartbeat also takes, and a goroutine blocked on a lock stops a
// synctest bubble's fake time, so the pause would never end.
type upgradeMembers struct {
	leader.MemberStore
	p *proc
	u *upgrader
}

var _ leader.ConfirmedMembers = (*upgradeMembers)(nil)

// errPaused is what a paused process's member status calls return.
var errPaused = errors.New("apisim: process paused")

func (m *upgradeMembers) reach(ctx context.Context) error {
	m.p.mu.Lock()
	paused, down := m.p.paused != nil, m.p.down
	m.p.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case paused:
		return errPaused
	case down:
		return errUnreachable
	}
	return nil
}

// note records a write (or a removal, del) of member id that landed.
func (m *upgradeMembers) note(id string, del bool) {
	w := m.u.w
	w.mu.Lock()
	m.u.run.Statuses = append(m.u.run.Statuses, StatusWrite{Member: id, At: time.Now(), Delete: del})
	w.mu.Unlock()
}

func (m *upgradeMembers) PutMember(ctx context.Context, election string, mb leader.Member) error {
	if err := m.reach(ctx); err != nil {
		return err
	}
	if err := m.MemberStore.PutMember(ctx, election, mb); err != nil {
		return err
	}
	m.note(mb.ID, false)
	return nil
}

func (m *upgradeMembers) DeleteMember(ctx context.Context, election, id string) error {
	if err := m.reach(ctx); err != nil {
		return err
	}
	if err := m.MemberStore.DeleteMember(ctx, election, id); err != nil {
		return err
	}
	m.note(id, true)
	return nil
}

func (m *upgradeMembers) Member(ctx context.Context, election, id string) (leader.Member, bool, error) {
	if err := m.reach(ctx); err != nil {
		return leader.Member{}, false, err
	}
	return m.MemberStore.Member(ctx, election, id)
}

func (m *upgradeMembers) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	if err := m.reach(ctx); err != nil {
		return nil, err
	}
	return m.MemberStore.Members(ctx, election, maxAge)
}

// ConfirmedMembers implements leader.ConfirmedMembers.
func (m *upgradeMembers) ConfirmedMembers(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	m.u.w.count("upgrade gate-read")
	return m.Members(ctx, election, maxAge)
}
