package leader

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-dsync/dsync/dsync"
)

// Terms across an outage of the store (dsync.ClientWithOutageGrace). A
// term whose lease is lost to a suspension of its session at its local
// deadline (dsync.ErrSuspended) ends there, as every lost term does: its
// context is cancelled (ErrLeadershipLost, wrapping ErrSuspended). Its
// lock is kept, not unlocked: the store judges the outage, and the next
// campaign of the Election takes the lock back (dsync.Mutex.LockContext
// on a Mutex whose hold was lost to a suspension): the same term again,
// with the same token, when the outage did not end it, and an error
// saying so when it did. While the lock is kept, another candidate takes
// the key only once the store's record shows the term ended (its leader
// cut off alone while the store was up for others): a term the outage
// did not end is taken back with nobody else leading in between. Leader
// and Observe judge the lock by the same rule.
//
// The campaign that takes a term back is the term's continuation, not a
// new election: it neither asks the member store's preflight nor waits
// for the steering rules, and the value proclaimed in the term is kept.
// A kept lock that no campaign takes back is released by the Client a
// TTL after the store's return, or by Close.

// lostCause is why a term whose lease was lost ends: ErrStalled when its
// work reported no progress within its deadline; else ErrLeadershipLost,
// wrapping dsync.ErrSuspended too when the lease was lost to an outage of
// the store (the lock is then kept: keepsLock).
func (e *Election) lostCause() error {
	err := e.mu.Err()
	switch {
	case errors.Is(err, dsync.ErrStalled):
		return ErrStalled
	case errors.Is(err, dsync.ErrSuspended):
		return errSuspendedTerm
	}
	return ErrLeadershipLost
}

// errSuspendedTerm is the cause of a term lost to a suspension of its
// lease: ErrLeadershipLost and dsync.ErrSuspended.
var errSuspendedTerm = fmt.Errorf("%w: %w", ErrLeadershipLost, dsync.ErrSuspended)

// keepsLock reports whether a term that ended with cause is left with
// its lock kept for the next campaign to take back.
func keepsLock(cause error) bool { return errors.Is(cause, dsync.ErrSuspended) }

// keep ends term t, lost to a suspension, for whoever won t.givingUp
// (its watch), as release does but without unlocking: the next campaign
// takes the lock back (keptTerm).
func (e *Election) keep(t *term) {
	e.observe(Transition{Election: e.name, Term: t.token, Cause: context.Cause(t.ctx)})
	e.state.Lock()
	e.term = nil
	e.kept = true
	e.state.Unlock()
	close(t.done)
}

// keptTerm reports whether the campaign under way takes back the lock
// its last term kept, and that term's token. e.kept changes only while
// no campaign is under way (keep ends a term, which the campaign waited
// for), so it holds for the whole campaign.
func (e *Election) keptTerm() (bool, uint64) {
	e.state.Lock()
	defer e.state.Unlock()
	return e.kept, e.procTerm
}

// settleKeptLocked records, once a campaign that took back (retaking) the
// lock its last term kept has its outcome err, whether the lock is still
// kept: ctx ended before the verdict on the outage left the Mutex
// holding the suspended hold. e.state is held.
func (e *Election) settleKeptLocked(retaking bool, err error) {
	if retaking {
		e.kept = err != nil && e.mu.Token() != 0
	}
}

// retakeErr is a campaign's error when it was to take the lock back: the
// Mutex's error when the outage ended the term is a termEndedError.
func (e *Election) retakeErr(err error, token uint64) error {
	if errors.Is(err, dsync.ErrLost) {
		return &termEndedError{election: e.name, token: token, err: err}
	}
	return err
}

// releaseKept releases the lock a term lost to a suspension kept, unless a
// campaign is under way (it takes the lock back, or releases it if Close
// ran: campaign).
// Close calls it once no campaign can begin.
func (e *Election) releaseKept() {
	e.state.Lock()
	release := e.kept && !e.campaigning
	if release {
		e.kept = false
	}
	e.state.Unlock()
	if release {
		e.unlockQuietly(context.Background())
	}
}

// resignKept is Resign when no term runs: it releases the lock a term
// lost to an outage kept, unless a campaign is under way (which takes it
// back), within ctx. Campaigns that begin meanwhile wait for it
// (awaitGivenUpLocked).
func (e *Election) resignKept(ctx context.Context) error {
	e.state.Lock()
	if !e.kept || e.campaigning || e.closed {
		e.state.Unlock()
		return nil
	}
	e.kept = false
	done := make(chan struct{})
	e.releasing = done
	e.state.Unlock()
	e.unlockQuietly(ctx)
	e.state.Lock()
	e.releasing = nil
	e.state.Unlock()
	close(done)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// A termEndedError is what Campaign returns when it was to take back a
// term lost to an outage of the store (its cause wraps
// dsync.ErrSuspended) and the outage ended the term: the store was up
// for others long enough to end it, or the term was not taken back
// within a TTL of the store's return. It wraps ErrLeadershipLost and
// the lock's error (wrapping dsync.ErrLost). This candidate holds
// nothing, and the next Campaign campaigns anew.
type termEndedError struct {
	election string
	token    uint64 // the ended term's
	err      error  // the lock's error: it wraps dsync.ErrLost
}

func (e *termEndedError) Error() string {
	return fmt.Sprintf("leader: election %q: term %d, lost in an outage of the store, not taken back: %v", e.election, e.token, e.err)
}

// Unwrap returns ErrLeadershipLost and the lock's error.
func (e *termEndedError) Unwrap() []error { return []error{ErrLeadershipLost, e.err} }
