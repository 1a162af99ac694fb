package dsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/internal/backoff"
	"github.com/go-dsync/dsync/dsync/internal/lease"
)

// Holds across an outage of the store (ClientWithOutageGrace): a claim
// a resume kept (dsync/internal/lease, retake.go) is taken over by a
// Mutex locked again (retake), or released once the verdict came, never
// while its session is suspended (its check would find it ended).

// resumed is told the session resumed, the holds whose claims its resume
// kept, and when it was suspended: the observer is told of the outage
// ridden through (event.Observer.OutageRidden), and the store keeps a
// record of it (outage_record.go); each hold holds again (Close ends
// it), and one of a primitive that does not take holds back is released
// at once (the keeper releases the others: Release).
func (c *Client) resumed(session string, holds []*hold, suspended time.Time) {
	resumed := c.cfg.lease.Clock.Now()
	c.observe(func(o *event.Observer) {
		if o.OutageRidden != nil {
			o.OutageRidden(event.Outage{Suspended: suspended, Resumed: resumed, Holds: len(holds)})
		}
	})
	c.recordOutageLater(session, suspended, resumed, len(holds))
	for _, h := range holds {
		c.claimLost(h.claim.Nonce, false)
		if !h.p.retakes && h.keeper.LetGo(h) {
			c.inBackground(func() { h.endKept(context.Background()) })
		}
	}
}

// suspended reports whether h was lost to a suspension of its session.
func (h *hold) suspended() bool {
	return errors.Is(h.err(), ErrSuspended)
}

// endKept releases h's claim, which a resume kept and h's owner gave up,
// within the release timeout; once, as an Unlock and the resume's report
// may both get there.
func (h *hold) endKept(ctx context.Context) {
	if !h.keptEnded.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.p.cfg.releaseTimeout())
	defer cancel()
	if err := h.p.client.end(ctx, h.claim, true); err != nil && !errors.Is(err, ErrClosed) {
		h.p.report(fmt.Errorf("dsync: release %q (kept across an outage): %w", h.p.key, err))
	}
}

// retake is LockContext on m while h, its hold, is lost to a suspension
// and m is not unlocked: it waits for the verdict, bounded by ctx. It
// reports whether that decided the call (done), and the call's result:
// nil when a new hold of h's claim was installed, ctx's cause when ctx
// ended first (m unchanged), an error wrapping ErrLost when the hold
// ended during the outage (m is unlocked). Not done: m was unlocked
// meanwhile, and the caller locks it as usual.
func (m *Mutex) retake(ctx context.Context, h *hold) (done bool, err error) {
	k := h.keeper
	for {
		if err := k.AwaitVerdict(ctx, h.sess); err != nil && ctx.Err() != nil {
			return true, context.Cause(ctx)
		}
		m.mu.Lock()
		if m.hold != h {
			m.mu.Unlock()
			return false, nil
		}
		next := &hold{p: h.p, claim: h.claim, kind: h.kind, lost: make(chan struct{}), keeper: k, sess: h.sess}
		ok, err := k.Retake(h, next, h.sess)
		switch {
		case ok:
			m.hold, m.last = next, next
			m.mu.Unlock()
			m.progress.Watch(next)
			return true, nil
		case err != nil:
			m.hold = nil
			m.mu.Unlock()
			_ = m.release(ctx, h) // its claim, if still kept, is released
			<-m.sem
			if errors.Is(err, lease.ErrNotKept) {
				return true, fmt.Errorf("dsync: lock %q: %w: the hold survived the store outage, but was released: not locked again within a TTL of the store's return", m.key, ErrLost)
			}
			return true, fmt.Errorf("dsync: lock %q: the hold lost in the store outage ended during it: %w", m.key, err)
		}
		m.mu.Unlock()
		// The verdict is to come: the deadline passed (this suspends the
		// session, if its timer has not yet), or it was suspended again.
		h.expireIfDue()
		if !backoff.Sleep(m.cfg.clock, backoff.Min, ctx.Done()) {
			return true, context.Cause(ctx)
		}
	}
}
