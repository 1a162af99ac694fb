package leader

import (
	"errors"

	"github.com/go-dsync/dsync/internal/observe"
)

// A Transition is this candidate starting or stopping to lead.
// A leader gauge (client-go's leader_election_master_status, 1 while
// leading) and a count of leadership changes are made of them.
type Transition struct {
	Election string
	Leading  bool
	// Term is the term's fencing token (the one that began or ended).
	Term uint64
	// Cause is why a term ended (ErrLeadershipLost, ErrResigned,
	// ErrTransferred, ErrPreempted, or the campaign context's cause); nil
	// when one began.
	Cause error
}

// WithObserver sets a function told of each Transition of this candidate,
// for metrics. Unlike OnElected and OnLost it may take its time: it is
// called after the fact, in order, from a goroutine of the Election's own,
// and never delays the election; if it falls far behind, transitions are
// dropped rather than wait. Package dsync's Observer (through the
// Election's Client) covers the lease the election's lock shares.
func WithObserver(f func(Transition)) Option {
	return func(c *config) error {
		if err := c.takes("WithObserver", forElection); err != nil {
			return err
		}
		if f == nil {
			return errors.New("leader: nil observer")
		}
		c.observer = f
		return nil
	}
}

// observe tells the observer of t, if there is one.
func (e *Election) observe(t Transition) {
	if e.cfg.observer == nil {
		return
	}
	f := e.cfg.observer
	e.events.Send(func() { f(t) })
}

// newEvents starts the queue that calls the observer, if there is one.
func (e *Election) newEvents() {
	if e.cfg.observer != nil {
		e.events = observe.New(nil)
	}
}
