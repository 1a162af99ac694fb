package leader

import (
	"context"
	"errors"
	"slices"
	"time"
)

// The version rule (WithVersionRule): a candidate waits to claim while a
// live member has a newer version, withdraws its waiting claim when one
// appears (steerStep), and passes a term it was granted when a fresh
// read shows one (passes).

// errIneligible ends a candidate's wait for the lock because a newer
// version is live (WithVersionRule): it waits until none is, then claims
// again (lockInTurn); callers never see it.
var errIneligible = errors.New("leader: a newer version is live")

// eligible reports whether this candidate may lead given members ms: no
// live member has a newer version (always, without WithVersionRule).
func (s *steerer) eligible(ms []Member) bool {
	e := s.e
	r := e.cfg.steer.rule()
	return !slices.ContainsFunc(ms, func(m Member) bool { return m.ID != e.self.ID && r.Newer(m.Version, e.self.Version) })
}

// awaitEligible waits, under WithVersionRule, until no live member has a
// newer version than this candidate's, reading the members once per
// heartbeat interval; at once without the rule.
func (s *steerer) awaitEligible(ctx context.Context) error {
	e := s.e
	if !e.cfg.steer.versionRule {
		return nil
	}
	for {
		ms, err := e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err == nil && s.eligible(ms):
			return nil
		case err != nil:
			e.cfg.logger.Warn("leader: read members", "election", e.name, "err", err)
		}
		timer := time.NewTimer(e.cfg.heartbeatInterval)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return context.Cause(ctx)
		}
	}
}

// passes is the pre-term gate of WithVersionRule: a candidate whose claim
// has come to hold reads the members fresh, and passes (releases, and
// begins no term) if a newer member is live, or if the store does not
// answer. A newer candidate whose status that read shows so never sees an
// older term begin after it.
func (s *steerer) passes(ctx context.Context) bool {
	e := s.e
	if !s.versionGated() {
		return false
	}
	ms, err := s.confirmedMembers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.cfg.logger.Warn("leader: read members before the term", "election", e.name, "err", err)
		}
		return true
	}
	return !s.eligible(ms)
}

// confirmedMembers lists the live members, from writes the store has
// confirmed when it can tell (ConfirmedMembers).
func (s *steerer) confirmedMembers(ctx context.Context) ([]Member, error) {
	e := s.e
	if c, ok := e.cfg.members.(ConfirmedMembers); ok {
		return c.ConfirmedMembers(ctx, e.name, e.cfg.memberMaxAge())
	}
	return e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
}

// A ConfirmedMembers is a MemberStore that can list the live members as
// of confirmed writes.
//
// Those are the writes its deployment has confirmed durably
// (leadermongo's: a read at read concern majority). WithVersionRule's
// pre-term gate reads through it when the store has it.
type ConfirmedMembers interface {
	ConfirmedMembers(ctx context.Context, election string, maxAge time.Duration) ([]Member, error)
}
