package chain

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// End ends c: a release if it held, a withdrawal if not. A release also
// prunes a part of the key's history below its floor, when a gate allows
// (prune.go). An error means the marker's fate is unknown; Flush sends it
// again.
func (e *Engine) End(ctx context.Context, c *Claim, held bool) error {
	return e.EndThen(ctx, c, held, nil)
}

// EndThen is End, calling ended (if not nil) once the marker is confirmed
// and before the release prunes: a caller that wakes the claim's waiters
// there hands the key over after one request (the marker's insert), where
// a prune (a read of a gate, of the claims below it, and a delete) would
// otherwise come first, once per bucket span and key (docs/deployments.md,
// "Costs", has the traced figures). It is not called when End returns an
// error. The prune's deletes may then land while the next holder walks, as another
// process's prune may (its walk reads the gate again if it finds a claim
// missing: walk.go, missingBelow).
func (e *Engine) EndThen(ctx context.Context, c *Claim, held bool, ended func()) error {
	kind := KindWithdraw
	if held || e.has(BugWithdrawAsRelease) {
		kind = KindRelease
	}
	d := Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: kind, Nonce: c.Nonce,
		Session: c.Session, Sent: e.clock.ServerNow().Latest}
	if held && (c.Below || c.Terms.Mode == Exclusive) {
		d.Clear = true
	}
	c.ended = true
	below, known := e.takeHeld(c) // taken even if the insert fails: no tip then
	if c.pinned {
		c.pinned = false
		defer e.unpin(c.Key) // after what the end teaches of the key
	}
	if err := e.store.Insert(ctx, d); err != nil && !errors.Is(err, ErrExists) {
		e.mu.Lock()
		e.ends[d.ID] = d
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	delete(e.ends, d.ID)
	e.mu.Unlock()
	e.noteEnded(c.Nonce, ownEnd{below: below, known: held && known})
	if held {
		e.learnTip(tipRelease{Doc: d, terms: c.Terms, below: below, belowKnown: known})
		if d.Clear {
			e.learnOwn(c)
		}
	}
	if ended != nil {
		ended()
	}
	if held {
		e.prune(ctx, c.Key, c.Seg)
	}
	return nil
}

// OnLanded sets f to be called with each end marker that Flush (or a
// Resender) lands, and each withdrawal of a claim that must never hold
// (one whose insert had no reply, say), so that the claim's waiters can
// be woken.
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
		e.mu.Unlock()
		e.noteEnded(d.Nonce, ownEnd{})
		e.tellLanded(d)
	}
	return e.Pending(), err
}

// tellLanded tells the OnLanded hook, if any, that end marker d landed.
func (e *Engine) tellLanded(d Doc) {
	e.mu.Lock()
	landed := e.landed
	e.mu.Unlock()
	if landed != nil {
		landed(d)
	}
}
