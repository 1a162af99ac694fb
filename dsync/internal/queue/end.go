package queue

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// ends is the end queue: the end markers whose insert had an unknown
// outcome, sent again until one is confirmed (Flush, and a Resender in
// the background), since a claim must never stay unended while its
// session lives on; and the hook told of each end that lands so (and of
// each withdrawal of a claim that must never hold: abandon), so that the
// claim's waiters are woken. Its lock is held only inside its methods,
// never across a request or a call out.
type ends struct {
	store Store
	holds *holds // told of each end Flush lands

	mu sync.Mutex
	// pending holds the markers of unknown outcome, by ID.
	pending map[string]Doc
	// landed is told of each end that Flush lands (OnLanded).
	landed func(Doc)
}

// pend records end marker d, whose insert had an unknown outcome, to be
// sent again by Flush.
func (q *ends) pend(d Doc) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending[d.ID] = d
}

// settle drops the marker of ID id, whose insert was confirmed, from the
// queue.
func (q *ends) settle(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.pending, id)
}

// OnLanded sets f to be called with each end marker that Flush (or a
// Resender) lands, and each withdrawal of a claim that must never hold
// (one whose insert had no reply, say), so that the claim's waiters can
// be woken.
func (q *ends) OnLanded(f func(Doc)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.landed = f
}

// Pending reports how many end markers of unknown outcome wait to be sent
// again by Flush.
func (q *ends) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Flush sends again the end markers whose outcome was unknown, and
// reports how many are still pending. Each one that lands is told to the
// OnLanded hook.
func (q *ends) Flush(ctx context.Context) (pending int, err error) {
	q.mu.Lock()
	docs := make([]Doc, 0, len(q.pending))
	for _, d := range q.pending {
		docs = append(docs, d)
	}
	q.mu.Unlock()
	slices.SortFunc(docs, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	for _, d := range docs {
		ierr := q.store.Insert(ctx, d)
		if ierr != nil && !errors.Is(ierr, ErrExists) {
			err = ierr
			continue
		}
		q.settle(d.ID)
		q.holds.noteEnded(d.Nonce, ownEnd{})
		q.tellLanded(d)
	}
	return q.Pending(), err
}

// tellLanded tells the OnLanded hook, if any, that end marker d landed.
func (q *ends) tellLanded(d Doc) {
	q.mu.Lock()
	landed := q.landed
	q.mu.Unlock()
	if landed != nil {
		landed(d)
	}
}
