package apisim

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// A partition member's Client and its view of the member status, over
// its process's faults.

// memberClient makes a partition member's Client over p's faulty view of
// the store (as the process's elections' Client is made: construct.go),
// which dead cuts off.
func memberClient(p *proc, dead *atomic.Bool) (*dsync.Client, error) {
	return dsync.NewClient(clocked(&procStore{Store: p.w.mem, p: p, elections: true, dead: dead}, p),
		dsync.ClientWithLogger(loggerOf(p, fmt.Sprintf("p%dm", p.id))),
		dsync.ClientWithPollInterval(pollInterval),
		dsync.ClientWithBucketSpan(p.cfg.Span),
		dsync.ClientWithTTL(p.cfg.TTL),
		graceOf(p.w))
}

// memberStore is a member's view of the member status: a paused process
// sends nothing, and an unreachable store or a crashed member reaches
// nothing.
type memberStore struct {
	leader.MemberStore
	p    *proc
	dead *atomic.Bool
	id   string // the member's ID
	// writes, if set, is told of each write (PartitionSim.writes).
	writes func(at time.Time, line string)
}

// PartitionSettings gives the Partition made over m its ID.
func (m *memberStore) PartitionSettings() clienthook.PartitionSettings {
	return clienthook.PartitionSettings{MemberID: m.id}
}

func (m *memberStore) reach(ctx context.Context) error {
	if err := m.p.waitRunning(ctx); err != nil {
		return err
	}
	m.p.mu.Lock()
	down := m.p.down
	m.p.mu.Unlock()
	if down || m.dead.Load() {
		return errUnreachable
	}
	return nil
}

func (m *memberStore) PutMember(ctx context.Context, election string, mb leader.Member) (err error) {
	if m.writes != nil {
		defer func() { m.writes(time.Now(), fmt.Sprintf("p%d put %s %s: %v", m.p.id, mb.ID, mb.Value, err)) }()
	}
	if err := m.reach(ctx); err != nil {
		return err
	}
	return m.MemberStore.PutMember(ctx, election, mb)
}

func (m *memberStore) Member(ctx context.Context, election, id string) (leader.Member, bool, error) {
	if err := m.reach(ctx); err != nil {
		return leader.Member{}, false, err
	}
	return m.MemberStore.Member(ctx, election, id)
}

func (m *memberStore) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	if err := m.reach(ctx); err != nil {
		return nil, err
	}
	return m.MemberStore.Members(ctx, election, maxAge)
}

func (m *memberStore) DeleteMember(ctx context.Context, election, id string) (err error) {
	if m.writes != nil {
		defer func() { m.writes(time.Now(), fmt.Sprintf("p%d delete %s: %v", m.p.id, id, err)) }()
	}
	if err := m.reach(ctx); err != nil {
		return err
	}
	return m.MemberStore.DeleteMember(ctx, election, id)
}
