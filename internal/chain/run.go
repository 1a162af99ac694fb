package chain

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Runs: on a store that reads a stretch of a key's queue in one request
// (driver.RunReader), a walk reads the claims below its own and their end
// markers a run at a time, not two documents per claim, so that the
// requests of a grant do not grow with the live claims below it (issue
// 44). A run always ends with the walker's own claim: the store returns a
// run's documents in increasing order of epoch, each read no earlier than
// the ones before it, so a run that finds the walker's claim with its
// nonce also proves it stored after everything below it in the run was
// read, which is what confirmOwn proves with a read of its own. If the
// engine reads nothing after that run before the claim holds, that read
// is not needed (confirmedByRun).
//
// A store without runs (FerretDB's: dsync/mongo/run.go) reads a walk by
// ID, a claim and its marker at a time; a claim right above this
// process's own release of a claim whose hold proves it needs no walk on
// any store (tip.go).
//
// A run is only used within one Walk: a claim found without a marker
// had none when the run passed it, and may have one since; a waiter that
// walks again reads a new run.

// runWindow is the number of epochs below where a walk goes on that its
// first run reads; each further run of the same walk reads twice as many.
const runWindow = 32

// run is what one read of a run found: the claims of epochs lo to hi and
// their end markers, by epoch (at[epoch-lo]).
type run struct {
	lo, hi uint64
	at     []runEpoch
}

// runEpoch is an epoch of a run: its claim, if found, and that claim's
// end marker, if found (a marker of another nonce ends no claim read).
type runEpoch struct {
	claim, end       Doc
	hasClaim, hasEnd bool
}

func (r *run) covers(epoch uint64) bool { return r != nil && r.lo <= epoch && epoch <= r.hi }

// claim returns the claim of epoch, which r covers.
func (r *run) claim(epoch uint64) (Doc, bool) {
	x := &r.at[epoch-r.lo]
	return x.claim, x.hasClaim
}

// end returns the end marker of claim d, of an epoch r covers.
func (r *run) end(d Doc) (Doc, bool) {
	x := &r.at[d.Epoch-r.lo]
	if !x.hasEnd || !x.hasClaim || x.claim.Nonce != d.Nonce {
		return Doc{}, false
	}
	return x.end, true
}

// readCounter is the engine's store, counting its reads (Engine.reads)
// when they are sent and again when they are answered, and those in
// flight (Engine.inRead): what a read teaches the engine arrives with
// its reply, which may come after a run sent later (confirmedByRun).
type readCounter struct {
	Store
	reads  *atomic.Uint64
	inRead *atomic.Int64
}

// begin counts a read's send, and returns what counts its reply.
func (s readCounter) begin() (answered func()) {
	s.reads.Add(1)
	s.inRead.Add(1)
	return func() {
		s.inRead.Add(-1)
		s.reads.Add(1)
	}
}

func (s readCounter) Get(ctx context.Context, id string) (Doc, bool, error) {
	defer s.begin()()
	return s.Store.Get(ctx, id)
}

func (s readCounter) GetSession(ctx context.Context, id string) (Session, bool, error) {
	defer s.begin()()
	return s.Store.GetSession(ctx, id)
}

// readRun reads, for c's walk, the run from some epochs below epoch (not
// below c's segment's first epoch or the key's floor) up to epoch, or up
// to c's own claim if that lies near (a walk from the top, or a waiter's
// next walk behind a few claims): runWindow epochs for the walk's first
// run, twice as many for each next one. A run that reaches c's claim and
// does not find it there, with its nonce, shows that the store lost the
// key's history since c's insert: c is given up (ErrReset), as
// confirmOwn would.
func (e *Engine) readRun(ctx context.Context, c *Claim, rr driver.RunReader, epoch uint64) error {
	depth := uint64(runWindow) << min(c.runs, 20)
	c.runs++
	// Not below the floor (a floor learned since the walk checked epoch
	// against it may lie above epoch: the run then starts at epoch).
	lo := min(max(c.Seg, 1, e.floorOf(c.Key, c.Seg).Epoch), epoch)
	if epoch > depth && epoch-depth > lo {
		lo = epoch - depth
	}
	hi := epoch
	if c.Epoch-epoch <= 4*runWindow {
		hi = c.Epoch
	}
	// The run confirms c's claim only if no other read was in flight
	// when it was sent, and none is sent or answered after its reply
	// until c holds (confirmedByRun): what such a read teaches could come
	// from the store before it lost the history the run shows gone.
	busy := e.inRead.Load() > 0
	e.reads.Add(1)
	e.inRead.Add(1)
	docs, err := rr.GetRun(ctx, c.Key, lo, hi)
	e.inRead.Add(-1)
	seq := e.reads.Add(1)
	if errors.Is(err, driver.ErrRunsUnsupported) {
		e.noRuns.Store(true) // reads by ID from now on
		return nil
	}
	if err != nil {
		return err
	}
	r := &run{lo: lo, hi: hi, at: make([]runEpoch, hi-lo+1)}
	for _, d := range docs {
		if d.Key != c.Key || d.Epoch < lo || d.Epoch > hi {
			continue
		}
		switch x := &r.at[d.Epoch-lo]; d.Kind {
		case KindClaim:
			x.claim, x.hasClaim = d, true
		case KindRelease, KindWithdraw, KindDead:
			if d.ID == EndID(d.Key, d.Epoch, x.claim.Nonce) {
				x.end, x.hasEnd = d, true
			}
		}
	}
	c.read = true
	c.run, c.runSeq = r, 0
	if hi != c.Epoch {
		return nil
	}
	if own, ok := r.claim(c.Epoch); (!ok || own.Nonce != c.Nonce) && !e.has(BugRunOwnUnchecked) {
		return e.voidClaim(ctx, c, fmt.Sprintf("the claim of epoch %d is gone", c.Epoch))
	}
	if !busy {
		c.runSeq = seq
	}
	return nil
}

// confirmedByRun reports whether c's own claim was confirmed by the last
// run its walk read, with no read of this engine's in flight when it was
// sent, nor sent or answered since its reply (of any claim's: a read of
// another goroutine merely costs c a confirmOwn).
func (e *Engine) confirmedByRun(c *Claim) bool {
	if e.has(BugRunOwnUnchecked) {
		return c.run != nil
	}
	return c.runSeq != 0 && c.runSeq == e.reads.Load()
}

// endedIn is ended for a claim d below c: its marker from c's run if the
// run covers it, or read. A live claim that c's mode passes needs no read
// of its session: c passes it whether it lives or not (a weighted walker
// counts its weight, and reads the sessions only if the weights leave it
// no room: full).
func (e *Engine) endedIn(ctx context.Context, c *Claim, d Doc) (ended bool, kind string, marker Doc, b Blocker, err error) {
	var m Doc
	var found bool
	if c.run.covers(d.Epoch) {
		m, found = c.run.end(d)
	} else {
		if m, found, err = e.store.Get(ctx, EndID(d.Key, d.Epoch, d.Nonce)); err != nil {
			return false, "", Doc{}, Blocker{}, err
		}
	}
	if found {
		return true, m.Kind, m, Blocker{}, nil
	}
	if e.passes(ctx, c.Terms, d) {
		return false, "", Doc{}, e.blockerOf(d), nil
	}
	return e.unended(ctx, d)
}

// lostRun is lost for a store that reads runs: after another process took
// epoch first, one run above it shows how far the queue goes now, and the
// next insert follows the highest claim of q's segment in it (which
// exists: F1), instead of trying one epoch after another, one insert each.
func (q *claimRun) lostRun(ctx context.Context, epoch uint64) (*Claim, bool, error) {
	c, done, err := q.lost(epoch)
	if done || q.dups < 2 && !q.climbBase {
		return c, done, err
	}
	// The run below, not point reads (a climb, or a gallop from the
	// floor: top), finds where the queue ends.
	q.climbBase, q.known = false, true
	docs, rerr := q.e.rr.GetRun(ctx, q.key, epoch+1, epoch+2*runWindow)
	if errors.Is(rerr, driver.ErrRunsUnsupported) {
		q.e.noRuns.Store(true)
	}
	if rerr != nil {
		return nil, false, nil // the next insert tries epoch+1
	}
	top := epoch
	for _, d := range docs {
		if d.Key == q.key && d.Kind == KindClaim && d.Seg == q.seg && d.Epoch > top {
			top = d.Epoch
		}
	}
	if top > epoch {
		q.e.learnNewest(q.key, top)
		q.base = top
	}
	return nil, false, nil
}

// gateFloor reads the gate that covers c's segment now, as freshFloor
// does, and returns its floor; ok is false (and nothing is given up or
// learned) if no gate covers the segment (or the one that does records
// another history than c): the caller then judges what it
// found as it would have without the read (a store that lost the key's
// history is a reset, not a lapse).
func (e *Engine) gateFloor(ctx context.Context, c *Claim) (f Floor, ok bool, err error) {
	g, found, err := e.liveSegment(ctx, c.Key)
	if err != nil || !found || g.Seg != c.Seg || !e.sameKnown(c.History, g.Nonce) {
		return Floor{}, false, err
	}
	e.learnGate(c.Key, g)
	return e.floorOf(c.Key, c.Seg), true, nil
}

// runReader returns the store's RunReader, nil if it has none or
// answered ErrRunsUnsupported.
func (e *Engine) runReader() driver.RunReader {
	if e.noRuns.Load() {
		return nil
	}
	return e.rr
}
