package dsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/internal/backoff"
	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/relock"
)

// The acquire loop that every primitive shares: a claim made in the
// session of the primitive's keeper, waited on until it holds by the
// grant rule of its terms, and installed as a hold of the session; or
// withdrawn. Each primitive keeps the holds it has (one for a Mutex,
// several for the readers of an RWMutex or the acquisitions of a
// Semaphore) and ends each with release.

// core is what every primitive has: its Client, its key as given and as
// stored, its owner identity (the Owner of every claim it makes) and its
// options.
type core struct {
	client *Client
	key    string // as given
	stored string // the key in the store: key, or in a namespace
	family string // the sync family's namespace ("" for a Mutex)
	owner  string
	cfg    config
	// lostHook, if set, is told of each of the primitive's holds that is
	// lost (after its lost channel is closed).
	lostHook func(*hold)
	// blocked, if set, is told each time a claim of the primitive is
	// found waiting behind another (by its terms and epoch).
	blocked func(by claimTerms, epoch uint64)
	// relock is the primitive's last takeover (relock.go).
	relock *relock.State
	// progress is the value's progress deadline (progress.go); nil when
	// off.
	progress *progressWatch
	// retakes: the primitive takes a hold whose claim a resume kept
	// back (a Mutex: resume.go); other primitives' are released.
	retakes bool
}

// newCore checks a primitive's Client, key and options, for the primitive
// prim (primMutex...). A primitive of the sync family passes its namespace
// (family); a Mutex passes "" and takes WithNamespace's, if any.
func newCore(client *Client, key, family, prim string, opts []Option) (core, error) {
	if client == nil {
		return core{}, ErrNilClient
	}
	cfg, err := newConfig(prim, opts, &client.cfg)
	if err != nil {
		return core{}, err
	}
	if iv := client.cfg.lease.Interval; cfg.readLinger > iv {
		return core{}, fmt.Errorf("dsync: WithReadLinger(%v): must not exceed the renew interval %v", cfg.readLinger, iv)
	}
	ns := cfg.namespace
	if family != "" {
		ns = family
	}
	stored, err := storedKey(key, ns)
	if err != nil {
		return core{}, err
	}
	if err := client.checkKey(stored); err != nil {
		return core{}, err
	}
	if span := client.eng.Span(); cfg.ttl > span {
		return core{}, ttlSpanError(cfg.ttl, span) // the store's span was adopted since NewClient
	} else if err := client.cfg.graceFits(cfg.ttl, span); err != nil {
		return core{}, err
	}
	return core{client: client, key: key, stored: stored, family: family, owner: xid.New().String(), cfg: cfg, relock: &relock.State{},
		progress: newProgressWatch(cfg.progress, cfg.clock)}, nil
}

// acquire claims p's key with terms t and waits for the claim to hold,
// retrying store errors, until it holds, or — when wait is false —
// makes one attempt that never waits (a try), each claim naming the lock
// set waiter if not "" (setmember.go). It returns the hold, joined to its
// session; it may be lost by the time the caller stores it (its lost
// channel is then closed).
func (p *core) acquire(ctx context.Context, t claimTerms, wait bool, waiter string) (*hold, error) {
	start := p.cfg.clock.Now()
	if wait {
		p.client.waitingDelta(1)
		defer p.client.waitingDelta(-1)
	}
	h, err := p.acquireLoop(ctx, t, wait, waiter)
	a := event.Acquisition{Key: p.key, Kind: p.kindOf(t), Wait: p.cfg.clock.Now().Sub(start)}
	if err != nil {
		p.client.observe(func(o *event.Observer) {
			if o.AcquireFailed != nil {
				o.AcquireFailed(a, err)
			}
		})
		return nil, err
	}
	a.Token = h.claim.Epoch
	p.client.observe(func(o *event.Observer) {
		if o.Acquired != nil {
			o.Acquired(a)
		}
	})
	return h, nil
}

// kindOf is the Kind of p's holds of terms t.
func (p *core) kindOf(t claimTerms) event.Kind {
	switch p.family {
	case rwNamespace:
		if isShared(t) {
			return event.KindRead
		}
		return event.KindWrite
	case semNamespace:
		return event.KindSemaphore
	case onceNamespace:
		return event.KindOnce
	}
	if p.cfg.namespace == electionNamespace {
		return event.KindElection
	}
	return event.KindMutex
}

// try makes a Try method's one attempt at p's key with terms t (and waiter,
// as acquire), bounded by ctx and by the try timeout (ClientWithTryTimeout).
// It returns the hold, or why there is none: an error wrapping ErrHeld
// (a *HeldError) when another claim holds the key or waits for it ahead;
// context.Cause(ctx), unchanged, when ctx ended first; otherwise the
// store's error. When the try timeout passed first, that is what the
// store said of the call the bound cut short (a refused connection, a
// reply that never came), after the bound (a *ctxerr.TryBound), or, if it
// said nothing more, that it did not answer in time (a *ctxerr.NoAnswer).
//
// Whatever the attempt sent and did not see confirmed is withdrawn: a
// claim whose insert had no reply may still land, so its withdrawal goes
// on in the background (the Client's resender) until it lands. Such a
// claim never holds for this process, and keeps no one waiting once its
// withdrawal lands.
func (p *core) try(ctx context.Context, t claimTerms, waiter string) (*hold, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	bound := p.cfg.tryTimeout()
	tctx, cancel := context.WithTimeoutCause(ctx, bound, &ctxerr.NoAnswer{Key: p.key, Bound: bound})
	defer cancel()
	h, err := p.acquire(tctx, t, false, waiter)
	if h != nil {
		return h, nil
	}
	p.client.resend.Kick()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var last *ctxerr.LastStore
	if errors.As(err, &last) && last.Cause == context.Cause(tctx) {
		// The bound passed, and the store said why the call had no
		// answer: it names the cause (a refused connection is not a
		// store that did not answer), once.
		return nil, &ctxerr.TryBound{Bound: bound, Key: p.key, Err: last.Last}
	}
	return nil, err
}

// errNotStarted: a claim came to hold, but its hold could not start in
// the session it was made in, which had not been retired: the key's
// coverage ended before the session's deadline (a renewal moved the
// deadline on meanwhile), or the deadline passed. The claim is withdrawn
// and the key queued again.
var errNotStarted = errors.New("the hold could not start before its key's coverage or its session's deadline ends")

// acquireLoop is acquire's work: its attempts and their backoff.
func (p *core) acquireLoop(ctx context.Context, t claimTerms, wait bool, waiter string) (*hold, error) {
	a := &attempts{p: p, ctx: ctx, wait: wait, backoff: backoff.Min}
	for {
		k := p.client.keeper
		sess, err := k.Enter(ctx)
		if err != nil {
			if err := a.enterFailed(err); err != nil {
				return nil, err
			}
			continue
		}
		h, err := p.claimAndAwait(ctx, k, sess, t, waiter, wait)
		if h != nil {
			return h, nil
		}
		live := sess.Context().Err() == nil // before check may retire it
		if !live {
			a.retired(k.Renewed(sess))
		}
		if errors.Is(err, ErrReset) && live {
			// The store lost the key's history (emptied or restored): the
			// claim is void. The session may be gone with it: renewing it
			// now retires it if so, and the next claim opens another.
			k.Check(sess)
		}
		k.Leave(sess)
		if err := a.claimFailed(err, live); err != nil {
			return nil, err
		}
	}
}

// failure is what a failed attempt returns: ctx's cause if it ended,
// otherwise the store's error.
func (p *core) failure(ctx context.Context, err, lastErr error) error {
	if ctx.Err() != nil {
		return ctxerr.Cause(ctx, lastErr, nil)
	}
	return err
}

// claimAndAwait queues p in sess with terms t, as a member of the lock
// set waiter if not "", and waits until the claim holds, then joins the
// hold to sess. Whatever stops it first (ctx, the session's retirement, a
// store error) withdraws the claim. With wait false, the store's Claim
// either holds at once or returns a *HeldError.
func (p *core) claimAndAwait(ctx context.Context, k *keeper, sess *session, t claimTerms, waiter string, wait bool) (*hold, error) {
	// Bound by the session: a claim made in a retired session must never
	// hold.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
	defer stop()

	cctx, ccancel := context.WithTimeout(wctx, p.cfg.ttl-p.client.cfg.lease.Margin)
	if wait && isExclusive(t) {
		// Strict turns after a takeover (relock.go) are an exclusive
		// claim's: claims that share a key do not take turns.
		p.afterPredecessor(cctx)
	}
	c, err := p.client.claim(cctx, p.stored, p.owner, sess.ID(), waiter, t, !wait)
	ccancel()
	if err != nil && sess.Context().Err() != nil && !errors.Is(err, ErrHeld) {
		// The session was retired meanwhile: that is why.
		return nil, leaseEnded(p.key, context.Cause(sess.Context()), err)
	}
	if err != nil {
		if wait {
			p.flushWithdrawals(ctx)
		}
		return nil, err
	}
	if wait {
		err = p.awaitHold(wctx, &c, t)
	}
	if err == nil {
		if h := p.join(c, k, sess, p.kindOf(t)); h != nil {
			return h, nil
		}
		err = fmt.Errorf("dsync: acquire %q: %w", p.key, cmp.Or(context.Cause(sess.Context()), errNotStarted))
	}
	if wait {
		p.withdraw(context.Background(), c)
	} else {
		p.withdraw(ctx, c) // a try's bound covers its withdrawal: the rest goes on in the background
	}
	return nil, err
}

// awaitHold waits until c holds, retrying store errors (the claim keeps
// its place: a waiter that stops waiting would lose it), until ctx ends
// (its cause), or the store says the key's history or segment is gone.
func (p *core) awaitHold(ctx context.Context, c *queue.Ref, t claimTerms) error {
	for {
		a, err := p.client.await(ctx, *c, p.blocked)
		switch {
		case ctx.Err() != nil:
			// The claim was in the queue, waiting: a call that ctx cut
			// short says only that, whatever its driver said.
			return &ctxerr.Ended{Where: fmt.Sprintf("dsync: wait for %q", p.key), Cause: context.Cause(ctx)}
		case err == nil:
			c.Below = a.below
			if isExclusive(t) {
				p.tookOver(c.Epoch, a.after)
			}
			return nil
		case errors.Is(err, ErrReset), queue.IsLapsed(err):
			return err
		}
		p.report(fmt.Errorf("dsync: waiting for %q: %w", p.key, err))
		if !backoff.Sleep(p.cfg.clock, backoff.Jitter(backoff.Min*10), ctx.Done()) {
			return err
		}
	}
}

// join makes c a hold, valid until its session's deadline, if the session
// is still live.
func (p *core) join(c queue.Ref, k *keeper, sess *session, kind event.Kind) *hold {
	h := &hold{p: p, claim: c, kind: kind, lost: make(chan struct{}), keeper: k, sess: sess}
	if !k.Join(h, sess) {
		return nil
	}
	p.progress.Watch(h)
	return h
}

// release ends h, which the primitive no longer counts as held: a lost
// hold reports why (wrapping ErrLost) and is left to run out, any other
// is released. The hold is ended (which looks at the deadline, and loses
// the hold if it has passed) before its keeper stops counting it: a hold
// the keeper no longer counts is not lost when its session is retired.
func (p *core) release(ctx context.Context, h *hold) error {
	p.progress.Unwatch(h)
	lostErr := h.end()
	kept := h.keeper.Remove(h)
	if lostErr != nil {
		// A lost hold is left to run out instead of being released: the
		// time between the local deadline and the session's expiry in
		// the store is the margin that lets a holder which was told
		// late stop before anyone else starts. But a claim that a
		// resume kept holds again: it is released (resume.go).
		if kept {
			h.endKept(ctx)
		}
		return lostErr
	}
	held := h.heldFor() // the hold ended here, whatever the write below does
	p.client.observe(func(o *event.Observer) {
		if o.Released != nil {
			o.Released(held)
		}
	})
	// The release is a write of its own (not an update of anything a
	// renewal touches), so it races no renewal in flight.
	if err := p.client.end(ctx, h.claim, true); err != nil {
		return fmt.Errorf("dsync: release %q: %w", p.key, err)
	}
	return nil
}

// flushWithdrawals lands the withdrawal of a claim whose insert failed,
// within the release timeout whatever ctx does: ctx may have ended while
// the insert was in flight, which then fails the withdrawal at once, and
// the insert may still land, keeping every claim queued behind it waiting
// until its withdrawal does. Flush tells those waiters (OnLanded). What it
// cannot land in time, the Resender goes on sending (Client.claim kicked
// it).
func (p *core) flushWithdrawals(ctx context.Context) {
	if p.client.eng.Pending() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.releaseTimeout())
	defer cancel()
	_, _ = p.client.eng.Flush(ctx)
}

// withdraw gives up a claim that will not be held, within ctx and the
// release timeout. If the store cannot confirm it, the Client sends it
// again in the background, and before its next claim; until then it
// waits in the queue for as long as its session lives.
func (p *core) withdraw(ctx context.Context, c queue.Ref) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.releaseTimeout())
	defer cancel()
	if err := p.client.end(ctx, c, false); err != nil {
		p.report(fmt.Errorf("dsync: withdraw %q (token %d): %w", p.key, c.Epoch, err))
	}
}

// validUntil is h's deadline on time.Now's scale (see Mutex.ValidUntil).
func (p *core) validUntil(h *hold) time.Time {
	return time.Now().Add(h.validUntil().Sub(p.cfg.clock.Now()))
}
