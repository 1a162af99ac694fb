package lockset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
)

// ErrDeadlock: a Set gave up its wait to break a deadlock (doc.go,
// "Deadlocks"). LockMore returns it as a *DeadlockError.
var ErrDeadlock = errors.New("lockset: deadlock broken")

// ErrDeadlockTimeout: WithDeadlockTimeout was given a timeout out of its
// range, or one longer than a member's TTL.
var ErrDeadlockTimeout = errors.New("lockset: deadlock timeout out of range")

// MinDeadlockTimeout is the shortest timeout WithDeadlockTimeout takes.
const MinDeadlockTimeout = 100 * time.Millisecond

// WithDeadlockTimeout turns deadlock detection on (doc.go, "Deadlocks"):
// a Set that has waited d for a member while it holds others records
// that it waits, and checks every d from then on whether its wait closes
// a cycle of Sets' waits. d is at least MinDeadlockTimeout and at most
// the Client's TTL (dsync.ClientWithTTL: New refuses a longer one); 0,
// the default, turns detection off.
func WithDeadlockTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d != 0 && d < MinDeadlockTimeout {
			return fmt.Errorf("%w: %v (0 for off, or at least %v)", ErrDeadlockTimeout, d, MinDeadlockTimeout)
		}
		c.deadlock = d
		return nil
	}
}

// A DeadlockError is what LockMore returns when its Set was the youngest
// of a deadlock and gave up its wait: every edge of the cycle, the first
// the Set's own. It wraps ErrDeadlock.
type DeadlockError struct {
	Cycle []Edge
}

// An Edge is one wait of a deadlock: the Set Set (of the process Host,
// PID) waited at Key (as stored) for the claim of token Token that the
// Set HeldBy holds, the Set of the next edge. Sets are named by their
// identity, the Waiter of their claims.
type Edge struct {
	Set, Host string
	PID       int
	Key       string
	Token     uint64
	HeldBy    string
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	b.WriteString(ErrDeadlock.Error())
	for i, x := range e.Cycle {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%sset %s (%s:%d) waits at %q for set %s's claim %d", sep, x.Set, x.Host, x.PID, x.Key, x.HeldBy, x.Token)
	}
	return b.String()
}

// Unwrap returns ErrDeadlock.
func (e *DeadlockError) Unwrap() error { return ErrDeadlock }

// victimError is why a Set's wait was given up: it was the youngest of
// cycle, found through its note and verified.
type victimError struct {
	cycle waitgraph.Cycle
	note  driver.Wait
}

func (v *victimError) Error() string { return v.public().Error() }

func (v *victimError) public() *DeadlockError {
	e := &DeadlockError{Cycle: make([]Edge, len(v.cycle))}
	for i, x := range v.cycle {
		e.Cycle[i] = Edge{Set: x.Note.Set, Host: x.Note.Host, PID: x.Note.PID, Key: x.Note.Key,
			Token: x.Holder.Claim.Epoch, HeldBy: x.Holder.Waiter}
	}
	return e
}

// tracker is what deadlock detection keeps of one Lock call and the
// holding it makes: the set's identity (its claims' Waiter), when the
// set began to hold (the store's time: the Since of its notes), and how
// many notes it numbered.
type tracker struct {
	id    string
	since time.Time
	n     uint64
}

// holding marks that the set holds a member from now on, if it did not:
// its age dates from the first, and is kept if it starts again.
func (t *tracker) holding(s *Set) {
	if t.since.IsZero() && s.cfg.deadlock > 0 {
		t.since = setcore.Record(s.client).Now()
	}
}

// recordBreak records that the set broke the deadlock v, its wait given
// up, and tells the Client's observer. The record is for people: nothing
// depends on it, so a failure is not reported, and it is bounded by the
// deadlock timeout.
func (s *Set) recordBreak(ctx context.Context, v *victimError, tr *tracker) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.deadlock)
	defer cancel()
	d := driver.Deadlock{Victim: tr.id, N: v.note.N, Cycle: v.cycle.Record(), Session: v.note.Session}
	rec := setcore.Record(s.client)
	_ = rec.PutDeadlock(ctx, d)
	e := event.Deadlock{Victim: tr.id, Key: v.note.Key}
	for _, x := range d.Cycle {
		e.Cycle = append(e.Cycle, event.DeadlockEdge{Set: x.Set, Key: x.Key, HeldBy: x.HeldBy, Token: x.Token})
	}
	rec.Broken(e)
}
