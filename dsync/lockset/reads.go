package lockset

import (
	"context"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
)

// reader is what deadlock detection reads (waitgraph.Reader) over a
// Client: each key's queue, judged as dsync status judges it, and the
// store's wait notes. It only reads; no rule of the queue depends on it
// (a claim holds or waits as the queue says).
type reader struct {
	r setcore.Reader
	// first, if set, is a read of a key's queue made before a check
	// began: it serves the check's first read of that key in Holders, once
	// (the first pass may read at any time before its end). Unended, the
	// second pass's read, always reads anew.
	first *firstRead
}

type firstRead struct {
	key  string
	q    []setcore.Claim
	used bool
}

// reads returns s's reader.
func (s *Set) reads() reader { return reader{r: setcore.Reads(s.client)} }

var _ waitgraph.Reader = reader{}

// Holders returns the claims that hold w's key by the grant rule, their
// sessions not proven expired, ahead of w: those that conflict with w,
// or, if an unexpired claim ahead of w does not hold, every one (w waits
// for that claim, which waits for them, or for a holder they let hold
// first). An edge goes to holders only: a waiting claim ahead is no
// holder. None if w is not in the queue (it ended).
func (r reader) Holders(ctx context.Context, w driver.ClaimRef) ([]waitgraph.Holder, error) {
	q, err := r.queue(ctx, w.Key)
	if err != nil {
		return nil, err
	}
	at := find(q, w)
	if at < 0 {
		return nil, nil
	}
	all := false
	for _, c := range q[:at] {
		all = all || !c.Holds && !c.Expired
	}
	var out []waitgraph.Holder
	for _, c := range q[:at] {
		if c.Holds && !c.Expired && (all || !c.Shared || !q[at].Shared) {
			out = append(out, waitgraph.Holder{Claim: c.ClaimRef, Waiter: c.Waiter})
		}
	}
	return out, nil
}

// Unended reports whether c is in its key's queue, read now, and its
// session is not proven expired: a claim ended, pruned or expired is not.
func (r reader) Unended(ctx context.Context, c driver.ClaimRef) (bool, error) {
	q, err := r.r.Queue(ctx, c.Key)
	if err != nil {
		return false, err
	}
	at := find(q, c)
	return at >= 0 && !q[at].Expired, nil
}

// queue is key's queue: the first read if it is key's and unused, else
// read now.
func (r reader) queue(ctx context.Context, key string) ([]setcore.Claim, error) {
	if f := r.first; f != nil && !f.used && f.key == key {
		f.used = true
		return f.q, nil
	}
	return r.r.Queue(ctx, key)
}

// LatestWait is the store's; an error wrapping errors.ErrUnsupported if
// it keeps no notes.
func (r reader) LatestWait(ctx context.Context, set string) (driver.Wait, bool, error) {
	return r.r.LatestWait(ctx, set)
}

// find is the place of c in q, -1 if absent.
func find(q []setcore.Claim, c driver.ClaimRef) int {
	for i, d := range q {
		if d.ClaimRef == c {
			return i
		}
	}
	return -1
}
