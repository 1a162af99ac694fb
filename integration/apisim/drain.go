package apisim

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/leader/operator"
)

// The operator's drains of partition members: now and then a worker's
// partition operation is an operator's instead, who reads the live
// members and the drains (as dsync status shows them) and drains a live
// member with operator.Drain, or undrains one he drained (a drain directive
// of a higher Gen), through the worker's process's view of the member
// store (a paused process sends nothing; a cut-off one reaches nothing).
// Drains may pile up until every live member is drained. Each attempt is
// an Action of DrainActorName: Key the member, Outcome drainLanded,
// undrainLanded or drainFailed, Return when its directive landed (the
// in-memory member store applies a directive as it is called, so one
// that failed never landed). CheckDrain judges them.

// DrainActorName names the operator's drain actions in the history and
// the figures.
const DrainActorName = "partition-drain"

// Outcomes of a drain action.
const (
	drainLanded   = "drained"
	undrainLanded = "undrained"
	drainFailed   = "failed"
)

// drainOperator is the operator's state: one drain or undrain at a time,
// and the next no sooner than next.
type drainOperator struct {
	busy bool
	next time.Time
}

// drainOp runs an operator's drain or undrain instead of a membership
// when the time for one has come, and reports whether it did.
func (ps *PartitionSim) drainOp(ctx context.Context, env *Env, who string) bool {
	now := time.Now()
	ps.mu.Lock()
	if ps.drains.next.IsZero() {
		// The first drain comes a while after the first membership
		// began. (The seed's draws take the world's lock, never held
		// while ps.mu is taken.)
		ps.drains.next = now.Add(env.Rand(2*env.TTL(), 8*env.TTL()))
	}
	due := !ps.drains.busy && !now.Before(ps.drains.next)
	ps.drains.busy = ps.drains.busy || due
	ps.mu.Unlock()
	if !due {
		return false
	}
	defer func() {
		ps.mu.Lock()
		ps.drains.busy = false
		ps.drains.next = time.Now().Add(env.Rand(2*env.TTL(), 8*env.TTL()))
		ps.mu.Unlock()
	}()
	p := env.inc.p
	ps.mu.Lock()
	hb := ps.maxHB
	ps.mu.Unlock()
	s := &drainStore{memberStore: &memberStore{MemberStore: p.w.members, p: p, dead: new(atomic.Bool)}}
	a := &Action{Who: who, Call: time.Now(), Outcome: drainFailed}
	defer func() {
		if a.Return.IsZero() {
			a.Return = time.Now()
		}
		de := *env
		de.actor = DrainActorName
		de.Record(a)
	}()
	ms, err := s.Members(ctx, partitionName, 4*max(hb, env.TTL()/3))
	if err != nil {
		return true
	}
	ds, err := s.Directives(ctx, partitionName)
	if err != nil {
		return true
	}
	drained := operator.Drained(ds)
	var in, out []string // live members drained, and not
	for _, m := range ms {
		if drained[m.ID] {
			in = append(in, m.ID)
		} else {
			out = append(out, m.ID)
		}
	}
	slices.Sort(in)
	slices.Sort(out)
	drain := len(out) > 0 && (len(in) == 0 || env.Chance(0.6))
	pick := in
	if drain {
		pick = out
	}
	if len(pick) == 0 {
		return true
	}
	a.Key = pick[int(env.Rand(0, time.Duration(len(pick))))]
	if _, err := operator.Drain(ctx, s, partitionName, a.Key, drain, who, "apisim"); err != nil {
		return true
	}
	a.Return, a.Outcome = s.landed, undrainLanded
	if drain {
		a.Outcome = drainLanded
	}
	return true
}

// drainStore is the operator's view of the member store: it notes when
// the directive it put landed.
type drainStore struct {
	*memberStore
	landed time.Time
}

func (s *drainStore) PutDirective(ctx context.Context, election string, d operator.Directive) error {
	err := s.memberStore.PutDirective(ctx, election, d)
	if err == nil {
		s.landed = time.Now()
	}
	return err
}

// PutDirective and Directives make a member's view of the member store
// serve operator.Directives, as the member store under it does, so that the
// members read the drains.
func (m *memberStore) PutDirective(ctx context.Context, election string, d operator.Directive) error {
	if err := m.reach(ctx); err != nil {
		return err
	}
	return m.MemberStore.(operator.Directives).PutDirective(ctx, election, d)
}

func (m *memberStore) Directives(ctx context.Context, election string) ([]operator.Directive, error) {
	if err := m.reach(ctx); err != nil {
		return nil, err
	}
	return m.MemberStore.(operator.Directives).Directives(ctx, election)
}
