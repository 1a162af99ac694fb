package queue

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Runs: on a store that reads a stretch of a key's queue in one request
// (driver.Roles.Runs), a walk reads the claims below its own and their end
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

// newRun returns the run of key's epochs lo to hi that a read of it
// returned as docs.
func newRun(key string, lo, hi uint64, docs []Doc) *run {
	r := &run{lo: lo, hi: hi, at: make([]runEpoch, hi-lo+1)}
	for _, d := range docs {
		if d.Key != key || d.Epoch < lo || d.Epoch > hi {
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
	return r
}

// reader is the engine's store as all its parts read it: it counts every
// read by ID (Get, GetSession) and every run when sent and again when
// answered, and the reads in flight, since what a read teaches the engine
// arrives with its reply, which may come after a run sent later
// (confirmed); and it reads runs of a key's queue, if the store can.
type reader struct {
	Store
	rr     driver.RunReader
	noRuns atomic.Bool   // rr answered ErrRunsUnsupported
	reads  atomic.Uint64 // counts every read's (and run's) send and its reply
	inRead atomic.Int64  // reads and runs sent and not yet answered
}

func newReader(store Store) *reader {
	r := &reader{Store: store}
	r.rr = store.Roles().Runs
	return r
}

// begin counts a read's send, and returns what counts its reply.
func (r *reader) begin() (answered func()) {
	r.reads.Add(1)
	r.inRead.Add(1)
	return func() {
		r.inRead.Add(-1)
		r.reads.Add(1)
	}
}

func (r *reader) Get(ctx context.Context, id string) (Doc, bool, error) {
	defer r.begin()()
	return r.Store.Get(ctx, id)
}

func (r *reader) GetSession(ctx context.Context, id string) (Session, bool, error) {
	defer r.begin()()
	return r.Store.GetSession(ctx, id)
}

// runReader returns the store's RunReader, nil if it has none or
// answered ErrRunsUnsupported.
func (r *reader) runReader() driver.RunReader {
	if r.noRuns.Load() {
		return nil
	}
	return r.rr
}

// getRun reads the documents of key's epochs lo to hi in one request
// (runReader must not be nil), counted as a read. seq is the count just
// after its reply, if no other read was in flight when it was sent (0
// otherwise): a run confirms what it shows only while no read is sent or
// answered after it (confirmed), and one in flight when it was sent
// could teach what the store held before the run. ok is false if the
// store answered ErrRunsUnsupported: it is read by ID from now on.
func (r *reader) getRun(ctx context.Context, key string, lo, hi uint64) (docs []Doc, seq uint64, ok bool, err error) {
	busy := r.inRead.Load() > 0
	r.reads.Add(1)
	r.inRead.Add(1)
	docs, err = r.rr.GetRun(ctx, key, lo, hi)
	r.inRead.Add(-1)
	seq = r.reads.Add(1)
	if errors.Is(err, driver.ErrRunsUnsupported) {
		r.noRuns.Store(true)
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, true, err
	}
	if busy {
		seq = 0
	}
	return docs, seq, true, nil
}

// confirmed reports whether seq, from getRun, is still the read count:
// no read was sent or answered since that run's reply.
func (r *reader) confirmed(seq uint64) bool { return seq != 0 && seq == r.reads.Load() }

// peekRun reads the documents of key's epochs lo to hi in one request,
// not counted: a Claim's look at where the queue ends, which teaches no
// walk anything (claimRun.lostRun).
func (r *reader) peekRun(ctx context.Context, key string, lo, hi uint64) ([]Doc, error) {
	docs, err := r.rr.GetRun(ctx, key, lo, hi)
	if errors.Is(err, driver.ErrRunsUnsupported) {
		r.noRuns.Store(true)
	}
	return docs, err
}
