package chain

import (
	"context"
	"errors"
	"fmt"
)

// What a claim checks of its segment's coverage before it holds (see
// segment.go).

// ensureCover checks, before c holds, that its segment is covered now
// (refreshing it if its coverage is near its end), by what this process
// learnt of it in the history c records: knowledge of a segment of the
// same number learnt in another history is not c's. A claim whose
// segment lapsed is withdrawn, and errLapsed returned: a process that
// lost coverage never relies on that segment again.
func (e *Engine) ensureCover(ctx context.Context, c *Claim) error {
	ks := e.snapshot(c.Key)
	now := e.clock.ServerNow()
	ours := ks.seg == c.Seg && e.sameKnown(ks.history, c.History)
	if !ours || !e.covered(ks, now.Latest) {
		e.abandon(context.WithoutCancel(ctx), c)
		if ours {
			e.dropCover(c.Key, c.Seg)
		}
		return fmt.Errorf("%w: %q", errLapsed, c.Key)
	}
	if e.bucket(now.Latest)+1 > ks.cover {
		ok, err := e.refreshKey(ctx, c.Key)
		switch {
		case !ok && err != nil:
			// Over, and why (the store's span is another since: the
			// next claim is refused with it).
			e.abandon(context.WithoutCancel(ctx), c)
			return fmt.Errorf("%w: %q: %w", errLapsed, c.Key, err)
		case !ok:
			e.abandon(context.WithoutCancel(ctx), c)
			return fmt.Errorf("%w: %q", errLapsed, c.Key)
		case err != nil:
			return err // unknown outcome: nothing learnt, nothing lost
		}
	}
	return nil
}

// proveGate reads the gate that covers c's segment: it must name it, and
// have been sent in the store's history now (history.go), which must be
// the one c records (c's owner learnt the segment in it). A claim that
// holds with nothing below it in its segment relies on that gate being in
// the store now, not only once.
func (e *Engine) proveGate(ctx context.Context, c *Claim) error {
	ks := e.snapshot(c.Key)
	if ks.seg == c.Seg && e.sameKnown(ks.history, c.History) {
		g, found, err := e.store.Get(ctx, GateID(c.Key, ks.cover))
		if err != nil {
			return err
		}
		if found && g.Kind == KindGate && g.Seg == c.Seg && e.sameKnown(c.History, g.Nonce) {
			// A gate held back across an emptying may name the segment in
			// the next history: it counts only if the store is in its own.
			err := e.gateOfThisHistory(ctx, g)
			if err == nil {
				e.learnGate(c.Key, g)
				return nil
			}
			if !errors.Is(err, errOtherHistory) {
				return err
			}
		}
		e.dropCover(c.Key, c.Seg)
	}
	e.abandon(context.WithoutCancel(ctx), c)
	return fmt.Errorf("%w: %q: no gate of this history of the store names segment %d", errLapsed, c.Key, c.Seg)
}
