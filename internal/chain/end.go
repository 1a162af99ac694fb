package chain

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// End ends c: a release if it held, a withdrawal if not. A release of
// every PruneEvery-th epoch also raises the floor to it, and prunes below
// floors raised PruneDelay or more ago. An error means the marker's fate
// is unknown; Flush sends it again.
func (e *Engine) End(ctx context.Context, c *Claim, held bool) error {
	kind := KindWithdraw
	if held || e.has(BugWithdrawAsRelease) {
		kind = KindRelease
	}
	d := Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: kind, Nonce: c.Nonce,
		Session: c.Session, Sent: e.clock.ServerNow().Latest}
	if held && (c.Below || c.Terms.Mode == Exclusive) {
		d.Clear = true
	}
	e.noteLive(c, false)
	if err := e.store.Insert(ctx, d); err != nil && !errors.Is(err, ErrExists) {
		e.mu.Lock()
		e.ends[d.ID] = d
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	delete(e.ends, d.ID)
	e.mu.Unlock()
	if held {
		e.learnTip(d)
		e.maintain(ctx, c, d)
	}
	return nil
}

// OnLanded sets f to be called with each end marker that Flush (or a
// Resender) lands, so that the claim's waiters can be woken.
func (e *Engine) OnLanded(f func(Doc)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.landed = f
}

// Pending reports how many end markers of unknown outcome wait to be sent
// again by Flush.
func (e *Engine) Pending() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ends)
}

// Flush sends again the end markers whose outcome was unknown, and
// reports how many are still pending. Each one that lands is told to the
// OnLanded hook.
func (e *Engine) Flush(ctx context.Context) (pending int, err error) {
	e.mu.Lock()
	docs := make([]Doc, 0, len(e.ends))
	for _, d := range e.ends {
		docs = append(docs, d)
	}
	e.mu.Unlock()
	slices.SortFunc(docs, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	for _, d := range docs {
		ierr := e.store.Insert(ctx, d)
		if ierr != nil && !errors.Is(ierr, ErrExists) {
			err = ierr
			continue
		}
		e.mu.Lock()
		delete(e.ends, d.ID)
		landed := e.landed
		e.mu.Unlock()
		if landed != nil {
			landed(d)
		}
	}
	return e.Pending(), err
}

// maintain raises the floor to a released epoch that is a multiple of
// PruneEvery, if every lower claim had ended when it held (its release m
// says so: a floor says everything below it has ended), and deletes below
// floors raised PruneDelay or more ago.
// Best effort: failures cost only history kept longer.
func (e *Engine) maintain(ctx context.Context, released *Claim, m Doc) {
	key := released.Key
	if released.Epoch%e.cfg.PruneEvery == 0 && m.Clear {
		sent := e.clock.ServerNow()
		if err := e.store.RaiseFloor(ctx, key, Floor{Epoch: released.Epoch, Nonce: released.Nonce, Seg: released.Seg}, sent.Latest); err == nil {
			confirmed := e.clock.Mono()
			e.mu.Lock()
			ks := e.state(key)
			if len(ks.prunes) < 8 {
				ks.prunes = append(ks.prunes, pruneMark{below: released.Epoch, nonce: released.Nonce, confirmed: confirmed, sent: sent.Earliest})
			}
			e.mu.Unlock()
		}
	}
	now := e.clock.Mono()
	var due pruneMark
	e.mu.Lock()
	ks := e.state(key)
	rest := ks.prunes[:0]
	for _, p := range ks.prunes {
		if now-p.confirmed >= e.cfg.PruneDelay {
			if p.below > due.below {
				due = p
			}
		} else {
			rest = append(rest, p)
		}
	}
	ks.prunes = rest
	e.mu.Unlock()
	if due.below <= max(released.Seg, 1)+1 {
		return
	}
	// The floor's claim must still be in the store: a store restored from
	// a backup older than the floor holds a history this prune would cut.
	if !e.has(BugPruneAnyAge) {
		d, found, err := e.store.Get(ctx, ClaimID(key, due.below))
		if err != nil || !found || d.Nonce != due.nonce {
			return
		}
	}
	// Only what was sent before the floor was raised: everything below it
	// in this store's history was, and a prune that lands late, after the
	// store was emptied, finds nothing of the new history to delete.
	before := due.sent
	if e.has(BugPruneAnyAge) {
		before = e.clock.ServerNow().Latest.Add(1 << 40)
	}
	_ = e.store.Prune(ctx, key, max(released.Seg, 1), due.below, before)
}
