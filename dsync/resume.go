package dsync

import (
	"context"
	"errors"
	"fmt"
)

// Holds across an outage of the store (ClientWithOutageGrace). A hold
// lost to a suspension of its session (ErrSuspended) leaves its claim to
// the suspension; if the session resumes, the keeper keeps the claim
// (dsync/internal/lease, retake.go) for its primitive; a claim given up (Unlock while
// suspended), of another primitive, or not taken over within a TTL is
// released, only once the verdict came: a release landing while the
// session is suspended would end a claim its check reads back, and have
// the whole session found ended. A retired session's claims are marked
// dead by the keeper.

// resumed is told the holds whose claims a resume kept: each holds
// again (Close ends it), and one of a primitive that does not take holds
// back is released at once (the keeper releases the others: Release).
func (c *Client) resumed(holds []*hold) {
	for _, h := range holds {
		c.claimLost(h.claim.Nonce, false)
		if !h.p.retakes && h.keeper.LetGo(h) {
			c.inBackground(func() { h.endKept(context.Background()) })
		}
	}
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
