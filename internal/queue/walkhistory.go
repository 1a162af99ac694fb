package queue

import (
	"context"
	"errors"
	"fmt"
)

// A walk's judgement of each claim it reads: whether it was sent in the
// store's history its own claim records (the store's emptyings and
// restores: history.go).

// claimOfHistory checks claim d of c's segment, which c's walk read: a
// claim recording another history than c (Doc.History) was sent in a
// history of the store other than the one c's owner learnt the segment
// in. Either d is a stray, sent before an emptying and landed after it
// (c's owner knows the store's history: d is a claim like any other,
// and its owner gives it up or its session ends), or c was made on
// knowledge of a segment of the store's history before, which the
// emptying took: the store's segment of that number is another's, and
// coverage this process knows of it is not the store's. The protocol
// document, read once per claim, says which: c is given up (errLapsed)
// unless it names c's history and this process's span.
func (e *Engine) claimOfHistory(ctx context.Context, c *Claim, d Doc) error {
	if c.inHistory || e.segments.sameKnown(c.History, d.History) {
		return nil
	}
	history, err := e.segments.confirmSpan(ctx)
	if err != nil && !errors.Is(err, ErrSpan) {
		return err
	}
	if err == nil && history == c.History {
		// The store is in c's history (and c's claim, read back before
		// c holds, shows it was not emptied since: confirmOwn).
		c.inHistory = true
		return nil
	}
	// c was made on knowledge of its segment learnt in another history of
	// the store than the one it is in: that knowledge is dropped, and the
	// key's next claim starts or joins the store's segment.
	return &giveUp{dropStale: true,
		err: fmt.Errorf("%w: %q: epoch %d was sent in another history of the store", errLapsed, c.Key, d.Epoch)}
}
