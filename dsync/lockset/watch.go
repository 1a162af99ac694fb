package lockset

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
)

// await waits for member m to hold, as its LockContext would, its claims
// naming the set's identity. With detection on and held not empty (the
// holds the set keeps while it waits), the wait is watched (watch): if
// the set gives it up as the youngest of a deadlock, await returns a
// *victimError, its claim withdrawn as a cancelled LockContext's is. A
// hold granted meanwhile wins: the cycle was gone.
func (s *Set) await(ctx context.Context, m Member, tr *tracker, held []setcore.Hold) (setcore.Hold, error) {
	if s.cfg.deadlock == 0 || len(held) == 0 {
		return m.m.Acquire(ctx, true, tr.id)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	var victim *victimError
	done := make(chan struct{})
	go func() {
		defer close(done)
		victim = s.watch(wctx, cancel, m, tr, held)
	}()
	h, err := m.m.Acquire(wctx, true, tr.id)
	cancel(nil)
	<-done
	if err == nil || victim == nil || ctx.Err() != nil {
		return h, err
	}
	return nil, victim
}

// watch watches a wait of the set at member m while it holds held: every
// deadlock timeout D, from the wait's start, it notes the wait if its
// claim is not noted yet (note), then checks the graph from the set
// (waitgraph.Check). If the set is the victim of a cycle it found and
// verified, it cancels the wait with the *victimError it returns. It
// returns nil once ctx ends (the wait did), or at once if the store keeps
// no notes.
func (s *Set) watch(ctx context.Context, cancel context.CancelCauseFunc, m Member, tr *tracker, held []setcore.Hold) *victimError {
	r := s.reads()
	t := time.NewTimer(s.cfg.deadlock)
	defer t.Stop()
	var noted *driver.Wait
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		t.Reset(s.cfg.deadlock)
		c, found, err := s.check(ctx, r, m, tr, held, &noted)
		if errors.Is(err, errors.ErrUnsupported) {
			return nil
		}
		if !found || victimOf(c) != tr.id || ctx.Err() != nil {
			continue
		}
		v := &victimError{cycle: c, note: *noted}
		cancel(v)
		return v
	}
}

// check is one tick of watch: it reads the queue of m's key, notes the
// wait if its claim is not noted yet, then checks the graph from the set,
// and reports a cycle found and verified. It is bounded by the wait
// (ctx), not by D: a tick cut short at D, on a store whose reads of one
// check took longer (FerretDB on PostgreSQL beside other work), gave up
// every time before it decided, and a cycle outlived dozens of Ds.
func (s *Set) check(ctx context.Context, r reader, m Member, tr *tracker, held []setcore.Hold, noted **driver.Wait) (waitgraph.Cycle, bool, error) {
	q, err := r.r.Queue(ctx, m.m.Stored())
	if err != nil {
		return nil, false, err // the note as it was: the next tick tries again
	}
	n, err := s.note(ctx, q, tr, held, *noted)
	if err != nil {
		return nil, false, err
	}
	if *noted = n; n == nil {
		return nil, false, nil
	}
	// The read of the waiting claim's queue serves the first pass, whose
	// reads may be of any time before its end; the second pass reads
	// anew (reader.first).
	return cycleThrough(ctx, reader{r: r.r, first: &firstRead{key: m.m.Stored(), q: q}}, tr.id)
}

// note returns the set's note of its wait, holding held, putting one if
// the claim it waits with is not the one noted: the set's unended claim
// in q (its key's queue, read now), with its identity, that does not hold
// (a claim made again after a store error is a new wait). It returns
// nil, with nothing put, if no such claim was read (it holds, or is
// being made again), or the put failed: the next tick tries again, with
// the next number (a note whose put had no reply may still land; notes
// are never reused).
func (s *Set) note(ctx context.Context, q []setcore.Claim, tr *tracker, held []setcore.Hold, noted *driver.Wait) (*driver.Wait, error) {
	var w *setcore.Claim
	for i := range q {
		if q[i].Waiter == tr.id && !q[i].Holds && !q[i].Expired {
			w = &q[i] // the highest: a claim made again is newer
		}
	}
	switch {
	case w == nil:
		return nil, nil
	case noted != nil && noted.Key == w.Key && noted.Epoch == w.Epoch && noted.Nonce == w.Nonce:
		return noted, nil
	}
	tr.n++
	n := driver.Wait{Set: tr.id, N: tr.n, Key: w.Key, Epoch: w.Epoch, Nonce: w.Nonce, Since: tr.since, Session: w.Session}
	for _, h := range held {
		n.Holds = append(n.Holds, h.Claim())
	}
	// ErrExists: an earlier put of this very note, with no reply, landed.
	if err := setcore.Record(s.client).PutWait(ctx, n); err != nil && !errors.Is(err, driver.ErrExists) {
		return nil, err
	}
	return &n, nil
}
