package dsync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/dsync/internal/backoff"
	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
)

// A Once runs a function to success once per key, across processes and
// restarts. It does so across every process that uses the key on the same
// store, and across their restarts. The function runs at least once, and
// more than once only after a success that could not be recorded (see
// below). Its zero value is not usable: create it with NewOnce; every
// method of a zero Once panics at once (unlike sync.Once, whose zero value
// is ready).
//
// Do takes the key's lock (a Mutex's, in the namespace "dsync:once/"),
// reads the key's done record under it, and only if there is none runs f.
// When f returns nil the record is inserted, naming the hold's fencing
// token, and the lock released: every Do that was waiting, and every
// later one, returns nil without running f. When f fails, or its process
// dies, or the hold is lost, the next Do (queued or later) runs f again.
// The record is inserted once and never updated. Compaction of idle keys
// keeps it: it stays until the collections are emptied, or, with
// WithForgetAfter(d), until d and then the idle age have passed.
//
// What a Once guarantees:
//
//   - Runs of f never overlap while their holds are valid (they are holds
//     of one lock), and f's context is cancelled, with cause ErrLost, when
//     its hold is lost. TokenOf(ctx) gives f the hold's token: pass it to
//     what f writes, so that a run that outlived its hold (a paused
//     process) is rejected.
//   - Once a Do has returned nil anywhere, no run of f starts again: a
//     run starts only after a read under its hold found no record, and
//     the record behind that nil landed while its hold was valid, before
//     any later hold began.
//   - Done reporting true says that a run succeeded and its record is in
//     the store, not that no run starts afterwards: a record that landed
//     after its hold had ended (its Do returned ErrUnconfirmed) can be
//     found by Done while the reply to a later hold's read, sent before
//     the record landed, is still on its way; that hold's run then starts
//     after Done said true, and its Do does not return nil either
//     (ErrRanTwice if its f succeeds).
//   - The record names a run whose f returned nil.
//   - Of the runs of f that succeed, at most one makes its Do return
//     nil: the one whose record's insert was answered while its hold was
//     valid, before another holder could read the key. Any other returns
//     an error wrapping ErrUnconfirmed or ErrRanTwice (unless its process
//     died first); any other Do returns nil only after finding the
//     record, without running f.
//   - f runs again after a success only if that success's record was not
//     confirmed within its hold: the process died or lost the hold, or
//     the store did not answer in time, between f's return and the
//     record's reply. So f must be idempotent, or fence its effects with
//     TokenOf: it runs at least once, and exactly once in the absence of
//     those faults.
//
// Typical uses: a migration at start-up on every replica (one runs it,
// the others wait in Do and then go on), and a scheduled job that must
// run once per slot across replicas (a key per slot, such as
// "report/2026-11-23T10:00", with WithForgetAfter so that the records of
// old slots go).
type Once struct {
	core

	// sem is the local lock: goroutines of one process that call Do on
	// one *Once contend locally first, so at most one claims the key.
	sem chan struct{}
	// done: this Once saw the record (or made it); it never looks again.
	done atomic.Bool
}

// NewOnce returns a Once for key on c.
func NewOnce(c *Client, key string, opts ...Option) (*Once, error) {
	p, err := newCore(c, key, onceNamespace, primOnce, opts)
	if err != nil {
		return nil, err
	}
	return &Once{core: p, sem: make(chan struct{}, 1)}, nil
}

// mustBeMade panics if o is a zero Once (zero.go).
func (o *Once) mustBeMade() {
	if o == nil || o.client == nil {
		zeroPanic("Once")
	}
}

// Key returns the Once's key, as given to NewOnce.
func (o *Once) Key() string {
	o.mustBeMade()
	return o.key
}

// Done reports whether f has run to success for o's key. That is, whether
// the done record exists. A Once that saw it answers true without looking
// again. It only reads, and creates nothing (see statuspage.Reader.Queue). A true
// answer does not stop a run whose read was sent before a late record
// landed (see Once); only a Do that returned nil does.
func (o *Once) Done(ctx context.Context) (bool, error) {
	o.mustBeMade()
	if o.done.Load() {
		return true, nil
	}
	_, found, err := (doneRecords{o.client}).look(ctx, o.stored)
	if err != nil {
		return false, err
	}
	if found {
		o.done.Store(true)
	}
	return found, nil
}

// Do runs f unless it has run to success for o's key, anywhere. A success
// in this process or any other counts. Do blocks until f has succeeded
// somewhere, or f failed here, or ctx ended. It returns nil once f has
// succeeded (here or elsewhere), f's error if f failed here (the next Do
// runs it again), or ctx's cause if ctx ended first. Store errors are
// retried while waiting for the lock, as Mutex.Lock retries them.
//
// f runs under the key's lock, with a context derived from ctx that is
// cancelled when the hold is lost (cause ErrLost) and that carries the
// hold's token (TokenOf). A panic in f releases the lock and is not
// recorded as a success.
//
// When f returned nil, Do returns nil only if f's record was confirmed
// while its hold was valid. Otherwise it says why f may have run twice:
// an error wrapping ErrUnconfirmed when the reply to the record's insert
// did not come before the hold was lost (or ctx ended), or came after it
// (f may run, or have run, elsewhere too); an error wrapping ErrRanTwice
// when the record met another hold's record that landed after this
// hold's read (f did run elsewhere too). After either, the key may be
// done (Done says), and a later Do of this Once that sees the record
// returns nil.
func (o *Once) Do(ctx context.Context, f func(ctx context.Context) error) error {
	o.mustBeMade()
	if f == nil {
		return errors.New("dsync: Once.Do with a nil function")
	}
	if o.done.Load() {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-o.sem }()
	if o.done.Load() {
		return nil
	}
	// The read before claiming spares the claim once done; it proves
	// nothing for the hold (an error only means: claim and see).
	if _, found, err := (doneRecords{o.client}).read(ctx, o.stored); err == nil && found {
		o.done.Store(true)
		return nil
	}
	for {
		h, err := o.acquire(ctx, exclusive(), true, "")
		if err != nil {
			return err
		}
		done, err := o.under(ctx, h, f)
		if done {
			o.done.Store(true)
		}
		if done || err != nil {
			return err
		}
	}
}

// under does Do's work while h holds: it reads the record again, runs f
// if there is none, and records f's success. done reports that the record
// exists (made now or found); with done false and a nil error, the hold
// was lost before anything ran, and Do claims again.
func (o *Once) under(ctx context.Context, h *hold, f func(ctx context.Context) error) (done bool, err error) {
	releaseCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), o.cfg.releaseTimeout())
	}
	release := func() {
		rctx, cancel := releaseCtx()
		defer cancel()
		if err := o.release(rctx, h); err != nil && !errors.Is(err, ErrLost) {
			o.report(err)
		}
	}
	found, err := o.readUnder(ctx, h)
	switch {
	case err != nil && ctx.Err() != nil:
		release()
		return false, ctxerr.Cause(ctx, nil, err)
	case err != nil:
		release() // the hold was lost while reading: claim again
		return false, nil
	case found:
		release()
		return true, nil
	}

	if !h.active() {
		release() // lost while reading: claim again
		return false, nil
	}
	ok := false
	defer func() {
		if !ok { // f panicked
			release()
		}
	}()
	ferr := o.run(ctx, h, f)
	if ferr != nil {
		ok = true
		release()
		return false, ferr
	}
	landed, err := o.record(ctx, h)
	ok = true
	// A hold lost with its record unconfirmed is not released (release
	// leaves a lost hold to run out): its claim ends with its session, so
	// the next holder gets in only once that expired, which gives the
	// record time to land.
	release()
	return landed, err
}

// readUnder reads the done record while h holds, retrying errors while
// the hold is valid and ctx lives.
func (o *Once) readUnder(ctx context.Context, h *hold) (found bool, err error) {
	held, stop := whileHeld(ctx, h)
	defer stop()
	pause := backoff.Min
	for {
		rctx, cancel := context.WithTimeout(held, o.cfg.ttl)
		_, found, err = (doneRecords{o.client}).under(rctx, h.claim)
		cancel()
		if err == nil {
			return found, nil
		}
		o.report(err)
		if !h.active() || !backoff.Sleep(o.cfg.clock, backoff.Jitter(pause), held.Done()) || !h.active() {
			return false, err
		}
		pause = backoff.Next(pause)
	}
}

// run runs f under h: with a context cancelled when h is lost, carrying
// h's token. The goroutine that watches the loss is gone when run
// returns.
func (o *Once) run(ctx context.Context, h *hold, f func(ctx context.Context) error) error {
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, tokenKey{}, h.claim.Epoch))
	defer cancel(nil)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-h.lost:
			cancel(fmt.Errorf("%w (key %q)", ErrLost, o.key))
		case <-fctx.Done():
		}
	}()
	defer func() {
		cancel(nil)
		<-watched
	}()
	return f(fctx)
}

// record inserts the done record of h's run, sending it again with the
// same nonce while its outcome is unknown, the hold is valid and ctx
// lives (its first attempt is made in any case: the record states a fact
// whenever it lands). landed reports that a record is in the store: this
// run's, or another hold's that met it. err is nil only when the record
// is this run's and its reply came while h was valid.
func (o *Once) record(ctx context.Context, h *hold) (landed bool, err error) {
	nonce := xid.New().String()
	held, stop := whileHeld(ctx, h)
	defer stop()
	pause := backoff.Min
	for {
		// Each attempt is detached from ctx (f has succeeded: an attempt
		// cut short only invites a second run) and bounded by the TTL.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cfg.ttl)
		rec, mine, err := (doneRecords{o.client}).mark(actx, h.claim, nonce, o.cfg.forgetAfter)
		cancel()
		if err == nil {
			return true, o.confirm(h, rec, mine)
		}
		o.report(err)
		if !h.active() || !backoff.Sleep(o.cfg.clock, backoff.Jitter(pause), held.Done()) || !h.active() {
			why := "the hold was lost"
			if ctx.Err() != nil {
				why = context.Cause(ctx).Error()
			}
			return false, fmt.Errorf("%w (key %q, token %d): no reply to its insert before %s: %w", ErrUnconfirmed, o.key, h.claim.Epoch, why, err)
		}
		pause = backoff.Next(pause)
	}
}

// confirm judges the reply to the insert of h's record, which found rec
// in the store (this run's record when mine). A reply counts for h only
// if it came while h was valid: a record that landed after h's session
// expired in the store may have landed after another holder's read found
// none, and that holder then runs f too.
func (o *Once) confirm(h *hold, rec doneRecord, mine bool) error {
	if !mine {
		// Another hold's run succeeded, and its record landed after this
		// hold's read found none: both ran f.
		return fmt.Errorf("%w (key %q): this run's record (token %d) met that of the run of token %d, which landed after this run's read",
			ErrRanTwice, o.key, h.claim.Epoch, rec.Token)
	}
	if !recordCounts(h) {
		return fmt.Errorf("%w (key %q, token %d): its record landed, but the reply came after the hold had ended: another holder may have run the function too",
			ErrUnconfirmed, o.key, h.claim.Epoch)
	}
	return nil
}

// validNow reports whether h is valid at this moment: its deadline has
// not passed and its session has not been retired (even if the holds
// have not been told yet).
func validNow(h *hold) bool {
	h.expireIfDue()
	if h.keeper.RetiredWith(h.sess) != nil {
		return false
	}
	return h.active()
}

// whileHeld returns a context derived from ctx that is cancelled when h
// is lost, and a function that releases its goroutine.
func whileHeld(ctx context.Context, h *hold) (context.Context, func()) {
	held, cancel := context.WithCancel(ctx)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		select {
		case <-h.lost:
			cancel()
		case <-held.Done():
		}
	}()
	return held, func() {
		cancel()
		<-gone
	}
}

type tokenKey struct{}

// TokenOf returns the fencing token of the hold a Once's function runs
// under. It reads it from the context Do passed the function, or one
// derived from it; ok is false for any other context.
func TokenOf(ctx context.Context) (token uint64, ok bool) {
	token, ok = ctx.Value(tokenKey{}).(uint64)
	return token, ok
}
