package dsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/wake"
)

// The protocol's calls, one per step of a primitive: a session opened and
// renewed, a claim made, waited on and ended. The engine
// (dsync/internal/queue) does the work; these add the Client's bookkeeping (the claims Close
// ends, wake-ups) and say which call failed. What each primitive does
// with them (a Mutex's relock wait, a Semaphore's limit warnings, a
// Once's done record) is the primitive's.

// openSession opens a session valid for ttl from when the request was
// sent, and starts following the store's wake-ups.
func (c *Client) openSession(ctx context.Context, ttl time.Duration) (string, error) {
	if err := c.prepare(ctx); err != nil {
		return "", err
	}
	id, _, err := c.eng.OpenSession(ctx, ttl)
	if err != nil {
		return "", wrap(ctx, "open session", "", err)
	}
	c.wake.Start()
	return id, nil
}

// renewSession extends session to ttl from when the request was sent. An
// error wrapping ErrSessionGone means it certainly was not, and the
// session no longer exists. Any end of unknown outcome is sent again in
// the background (the Resender), never here: the keeper applies the
// confirmation only once this returns, so ends sent first, on a store
// slow to answer them, made a renewal confirmed in time count as late
// (or let its deadline pass meanwhile) and retired the session, whose
// withdrawn claims added more ends to send (issue 45).
func (c *Client) renewSession(ctx context.Context, session string, ttl time.Duration) error {
	if err := c.prepare(ctx); err != nil {
		return wrap(ctx, "renew session", "", err)
	}
	found, _, err := c.eng.RenewSession(ctx, session, ttl)
	if err != nil {
		return wrap(ctx, "renew session", "", err)
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrSessionGone, session)
	}
	c.resend.Kick()
	return nil
}

// claim queues owner for key in session, as a member of the lock set
// waiter if not "" (its claim names it: queue.Ref.Waiter), and returns the
// claim. With try set, it holds at once or returns a *HeldError, having
// withdrawn what it inserted.
func (c *Client) claim(ctx context.Context, key, owner, session, waiter string, t queue.Terms, try bool) (queue.Ref, error) {
	if err := c.checkKey(key); err != nil {
		return queue.Ref{}, err
	}
	if session == "" {
		return queue.Ref{}, errors.New("dsync: claim without a session")
	}
	if err := c.prepare(ctx); err != nil {
		return queue.Ref{}, err
	}
	if c.eng.Pending() > 0 {
		// An end of this process's whose outcome was unknown: land it
		// first, or this claim may queue behind a claim of its own.
		_, _ = c.eng.Flush(ctx)
	}
	var (
		cl  *queue.Claim
		err error
	)
	if try {
		cl, err = c.eng.TryClaimIn(ctx, key, owner, session, waiter, t)
	} else {
		cl, err = c.eng.ClaimIn(ctx, key, owner, session, waiter, t, false)
	}
	if err != nil {
		// A claim whose insert had no reply was withdrawn, and a
		// withdrawal that failed is pending: it must go on in the
		// background now, since nothing else may (a process that holds
		// nothing renews no session), or the claim, if it landed, keeps
		// the key's waiters until its session expires.
		c.resend.Kick()
	}
	var busy *queue.BusyError
	switch {
	case errors.As(err, &busy):
		return queue.Ref{}, &HeldError{Key: key, Owner: busy.Blocker.Owner, Token: busy.Blocker.Epoch}
	case errors.Is(err, queue.ErrSpan):
		return queue.Ref{}, spanError(c.cfg.spanSet, fmt.Errorf("dsync: claim %q: %w", key, err))
	case err != nil:
		return queue.Ref{}, wrap(ctx, "claim", key, err)
	}
	c.dir.Claimed(key) // after the claim's insert, so as not to delay it
	claim := queue.Ref{Key: key, Owner: owner, Session: session, Epoch: cl.Epoch, Nonce: cl.Nonce, Terms: t, Below: cl.Below, Seg: cl.Seg, History: cl.History,
		Waiter: cl.Waiter}
	c.mu.Lock()
	c.claims[claim.Nonce] = liveClaim{c: claim, held: try}
	c.mu.Unlock()
	c.wake.Claimed(key, cl.Epoch, session)
	return claim, nil
}

// awaited is how a claim came to hold.
type awaited struct {
	// below: every lower claim had ended when it began to hold.
	below bool
	// after is the owner of the claim whose release it came to hold
	// after, if that claim was the one just below it; "" otherwise (a
	// relock wait's cue, relock.go).
	after string
}

// await blocks until cl holds (by the grant rule: for an exclusive claim,
// every lower epoch of its key has ended), or ctx ends (its cause), or the
// store fails. Each time the claim is found blocked, blocked (if not nil)
// is told by the terms and epoch of which claim: a Semaphore's limit
// warnings (Semaphore.blockedBy).
func (c *Client) await(ctx context.Context, cl queue.Ref, blocked func(by claimTerms, epoch uint64)) (awaited, error) {
	if err := c.checkKey(cl.Key); err != nil {
		return awaited{}, err
	}
	if err := c.prepare(ctx); err != nil {
		return awaited{}, err
	}
	cc := queue.Resume(cl)
	for {
		since := c.wake.Mark() // before the walk's reads (Wait)
		head, blocker, err := c.eng.Walk(ctx, cc)
		if err != nil {
			return awaited{}, wrap(ctx, "wait for", cl.Key, err)
		}
		if head {
			c.wake.Holding(wake.ClaimID{Key: cl.Key, Epoch: cl.Epoch})
			c.mu.Lock()
			if lc, ok := c.claims[cl.Nonce]; ok {
				lc.held = true
				lc.c.Below = cc.Below
				c.claims[cl.Nonce] = lc
			}
			c.mu.Unlock()
			a := awaited{below: cc.Below}
			if prev, ok := cc.After(); ok {
				a.after = prev.Owner
			}
			return a, nil
		}
		if blocked != nil {
			blocked(blocker.Terms, blocker.Epoch)
		}
		waitsFor := cc.WaitsFor(blocker)
		heard, err := c.wake.WaitAny(ctx, cl.Key, cl.Epoch, blockersOf(waitsFor), cc.Shortfall(waitsFor), since)
		if err != nil {
			return awaited{}, err
		}
		cc.Suspect(heard)
	}
}

// claimLost notes that the hold of the claim nonce was lost (lost): its
// lease ended it, and Close sends it no end; or that it holds again
// (!lost: a resume kept it, resume.go), and Close ends it.
func (c *Client) claimLost(nonce string, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lc, ok := c.claims[nonce]; ok {
		lc.lost = lost
		c.claims[nonce] = lc
	}
}

// end ends cl: a release if it held, a withdrawal if not. After an error
// the end is sent again in the background until it lands.
func (c *Client) end(ctx context.Context, cl queue.Ref, held bool) error {
	if err := c.checkKey(cl.Key); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.claims, cl.Nonce)
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed // Close ended it
	}
	// The end is sent even when Prepare fails (ctx ended, say): the store
	// was prepared for the claim, and an end not sent is not sent again
	// either. The claim would then hold while its session lives, which
	// this Client's next claim of any key keeps renewing: its next Lock
	// of this key would wait behind it. Sent and failed, it is pending,
	// and the resender sends it again.
	_ = c.store.Prepare(ctx)
	// The waiters are woken as soon as the marker is confirmed, before the
	// release's prune (EndThen).
	err := c.eng.EndThen(ctx, queue.Resume(cl), held, func() { c.wake.Ended(ctx, cl.Key, cl.Epoch) })
	if err != nil {
		c.resend.Kick()
		return wrap(ctx, "end", cl.Key, err)
	}
	return nil
}

// wrap prefixes an error with the call and its key, marks an engine's
// finding that the store lost the key's history ErrReset, and an error
// that is only ctx's end a *ctxerr.Ended. It does not add ctx's cause to
// a driver's error: whoever returns the error says the cause once
// (ctxerr.Cause).
func wrap(ctx context.Context, op, key string, err error) error {
	where := "dsync: " + op
	if key != "" {
		where += fmt.Sprintf(" %q", key)
	}
	if errors.Is(err, queue.ErrReset) {
		return fmt.Errorf("%s: %w: %w", where, ErrReset, err)
	}
	if e := ctxerr.EndedBy(ctx, where, err); e != nil {
		return e
	}
	return fmt.Errorf("%s: %w", where, err)
}

// blockersOf is what a waiter's wait needs of the claims it waits for.
func blockersOf(bs []queue.Blocker) []wake.Blocker {
	out := make([]wake.Blocker, len(bs))
	for i, b := range bs {
		out[i] = wake.Blocker{Epoch: b.Epoch, Session: b.Session, Expires: b.ExpiresAt, Weight: max(b.Terms.Weight, 0)}
	}
	return out
}
