package dsync

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// The members of lock sets (package dsync/lockset), served one at a time
// through dsync/internal/setcore, whose calls are set here: package dsync
// exports nothing for lock sets. A member's hold is an ordinary hold of
// its primitive, claimed under the primitive's local turn where it has
// one and installed there as the primitive's own Lock installs it, so
// that its Token, Lost and Err see it; the set keeps the turn until it
// releases the hold, and releases exactly that hold (an RWMutex's read
// hold by pointer, not its oldest).

func init() {
	setcore.Mutex = func(v any) setcore.Member {
		m := v.(*Mutex)
		m.mustBeMade()
		return &setMember{p: &m.core, sem: m.sem, terms: exclusive(), busy: m.heldHere, install: m.install,
			uninstall: func(h *hold) bool {
				m.mu.Lock()
				defer m.mu.Unlock()
				if m.hold != h {
					return false
				}
				m.hold = nil
				return true
			}}
	}
	setcore.Write = func(v any) setcore.Member {
		rw := v.(*RWMutex)
		rw.mustBeMade()
		return &setMember{p: &rw.core, sem: rw.sem, terms: exclusive(), before: rw.dropLinger, install: rw.installWrite,
			busy: func() error { return &HeldError{Key: rw.key, Owner: rw.owner, Token: rw.writeToken()} },
			uninstall: func(h *hold) bool {
				rw.mu.Lock()
				mine := rw.write == h
				if mine {
					rw.write = nil
				}
				rw.mu.Unlock()
				return mine && rw.holds.remove(h)
			}}
	}
	setcore.Read = func(v any) setcore.Member {
		rw := v.(*RWMutex)
		rw.mustBeMade()
		return &setMember{p: &rw.core, terms: shared(), install: rw.holds.add, uninstall: rw.holds.remove}
	}
}

// setMember is a setcore.Member. sem is the local turn, nil for a read;
// busy is what a try meets when the turn is taken; before runs before a
// claim (an RWMutex writer ends its lingering read claim).
type setMember struct {
	p         *core
	sem       chan struct{}
	terms     claimTerms
	busy      func() error
	before    func(context.Context)
	install   func(*hold)
	uninstall func(*hold) bool
}

func (m *setMember) Client() any        { return m.p.client }
func (m *setMember) Key() string        { return m.p.key }
func (m *setMember) Stored() string     { return m.p.stored }
func (m *setMember) TTL() time.Duration { return m.p.cfg.ttl }

func (m *setMember) TryTurn() error {
	if m.sem == nil {
		return nil
	}
	select {
	case m.sem <- struct{}{}:
		return nil
	default:
		return m.busy()
	}
}

func (m *setMember) Turn(ctx context.Context) error {
	if m.sem == nil {
		return nil
	}
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (m *setMember) Unturn() {
	if m.sem != nil {
		<-m.sem
	}
}

func (m *setMember) Acquire(ctx context.Context, wait bool, waiter string) (setcore.Hold, error) {
	if m.before != nil {
		m.before(ctx)
	}
	acquire := func() (*hold, error) { return m.p.try(ctx, m.terms, waiter) }
	if wait {
		acquire = func() (*hold, error) { return m.p.acquire(ctx, m.terms, true, waiter) }
	}
	h, err := acquire()
	if err != nil {
		return nil, err
	}
	// The set's holds count as progress from its return (Start): an
	// early member must not stall while the set waits for a later one.
	m.p.progress.Unwatch(h)
	m.install(h)
	return &setHold{m: m, h: h}, nil
}

// setHold is a setcore.Hold.
type setHold struct {
	m *setMember
	h *hold
}

func (s *setHold) Token() uint64 { return s.h.claim.Epoch }
func (s *setHold) Err() error    { return s.h.err() }
func (s *setHold) Claim() driver.ClaimRef {
	return driver.ClaimRef{Key: s.h.claim.Key, Epoch: s.h.claim.Epoch, Nonce: s.h.claim.Nonce}
}
func (s *setHold) Start() { s.m.p.progress.Watch(s.h) }

func (s *setHold) Lost() <-chan struct{} {
	s.h.expireIfDue() // the timer may not have run yet after a pause
	return s.h.lost
}

func (s *setHold) ValidUntil() time.Time { return s.m.p.validUntil(s.h) }

func (s *setHold) OnLost(f func()) { s.h.onLost.Store(&f) }

func (s *setHold) Release(ctx context.Context) error {
	if !s.m.uninstall(s.h) {
		return setcore.ErrUninstalled
	}
	defer s.m.Unturn()
	return s.m.p.release(ctx, s.h)
}

func (s *setHold) Unlock() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.m.p.cfg.releaseTimeout())
	defer cancel()
	err := s.Release(ctx)
	if err != nil && !errors.Is(err, ErrLost) && !errors.Is(err, setcore.ErrUninstalled) {
		s.m.p.report(err)
	}
	return err
}
