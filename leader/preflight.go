package leader

import (
	"context"
	"errors"
	"time"
)

// preflight asks the member store, if it checks, whether this candidate
// may campaign. A refusal (ErrRefused) ends the campaign; the store
// failing to answer does not: it is logged and asked again, with
// backoff, until ctx ends (then its cause, as Campaign documents).
func (e *Election) preflight(ctx context.Context) error {
	p, ok := e.cfg.members.(Preflighter)
	if !ok {
		return nil
	}
	backoff := preflightBackoff
	for {
		err := p.Preflight(ctx, e.name)
		switch {
		case err == nil || errors.Is(err, ErrRefused):
			return err
		case ctx.Err() != nil:
			return context.Cause(ctx)
		}
		e.cfg.logger.Warn("leader: preflight", "election", e.name, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		backoff = min(2*backoff, maxPreflightBackoff)
	}
}

// The waits between two preflights whose store failed to answer.
const (
	preflightBackoff    = 50 * time.Millisecond
	maxPreflightBackoff = 2 * time.Second
)
