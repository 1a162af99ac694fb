package dsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// What an acquire returns when its context ends: the context's cause,
// unchanged, unless the store was failing. A store call that was in
// flight when the context ended, and failed because it did, is no store
// failure: that the caller stopped is all it says.

// endedError is the error of a call that says only that its context
// ended: the driver returned the context's own error or cause (it had
// nothing to add), or the call was a wait that ctx cut short.
type endedError struct {
	where string // such as `dsync: claim "k"`
	cause error  // context.Cause of the call's context
}

func (e *endedError) Error() string { return e.where + ": " + e.cause.Error() }
func (e *endedError) Unwrap() error { return e.cause }

// ended returns an *endedError for err, from a call made under ctx at
// where, if err is only ctx's end; otherwise nil.
func ended(ctx context.Context, where string, err error) error {
	if ctx.Err() == nil || (err != ctx.Err() && err != context.Cause(ctx)) {
		return nil
	}
	return &endedError{where: where, cause: context.Cause(ctx)}
}

// saysMore reports whether err, the error of a store call that was in
// flight when ctx ended, says more than that ctx ended. A cancelled ctx
// is the caller's decision to stop: whatever a call it cut short says is
// about being stopped (a driver's "connection ... context canceled").
// When ctx's deadline passed, a driver that says why its call had no
// answer (no server reachable, say) tells the caller why the wait ran
// out, unless it said nothing but the context's error.
func saysMore(ctx context.Context, err error) bool {
	var e *endedError
	switch {
	case err == nil, errors.As(err, &e), err == ctx.Err(), err == context.Cause(ctx):
		return false
	case errors.Is(ctx.Err(), context.Canceled):
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.Cause(ctx))
	}
	return true
}

// contextErr is what an acquire returns when ctx ends: its cause,
// unchanged, unless attempts were failing. failed is the last store error
// met while ctx lived, nil if none; cut is the error of the call in
// flight when ctx ended, nil if none, which counts only if it says more
// than that ctx ended (saysMore).
func (p *core) contextErr(ctx context.Context, failed, cut error) error {
	cause := context.Cause(ctx)
	last := failed
	if last == nil && saysMore(ctx, cut) {
		last = cut
	}
	if last == nil || last == cause || last.Error() == cause.Error() {
		return cause
	}
	return &lastStoreError{cause: cause, last: last}
}

// lastStoreError is a context's cause together with the store error that
// kept the acquire from holding before the context ended.
type lastStoreError struct{ cause, last error }

func (e *lastStoreError) Error() string {
	return fmt.Sprintf("%v (last store error: %v)", e.cause, e.last)
}

func (e *lastStoreError) Unwrap() []error { return []error{e.cause, e.last} }

// leaseEndedError is what a claim returns when this process's session
// was retired before the claim held: the session's cause, which wraps
// ErrLost for the holds the session had, names why. The claim lost no
// hold, so the error is not ErrLost; it is what else the cause is
// (ErrClosed, ErrRevoked), and says the cause once.
type leaseEndedError struct {
	key   string
	cause error // the session's cause: wraps ErrLost
	other error // the claim's own error, when it is not the cause's doing
}

func (e *leaseEndedError) Error() string {
	why := strings.TrimPrefix(e.cause.Error(), ErrLost.Error()+": ")
	msg := fmt.Sprintf("dsync: acquire %q: this process's lease ended before the claim held: %s", e.key, why)
	if e.other != nil {
		msg += " (" + e.other.Error() + ")"
	}
	return msg
}

// Is reports whether the session's cause, or the claim's own error, is
// target; never ErrLost.
func (e *leaseEndedError) Is(target error) bool {
	if target == ErrLost {
		return false
	}
	return errors.Is(e.cause, target) || e.other != nil && errors.Is(e.other, target)
}

// leaseEnded returns the error of key's claim, which failed with err
// after its session ended with cause.
func leaseEnded(key string, cause, err error) error {
	e := &leaseEndedError{key: key, cause: cause}
	if !errors.Is(err, cause) {
		e.other = err
	}
	return e
}

// tryBoundError is a try that its bound ended while a store call was
// out, and what the store said of that call.
type tryBoundError struct {
	key   string
	bound time.Duration
	err   error
}

func (e *tryBoundError) Error() string {
	return fmt.Sprintf("dsync: try %q: stopped at the try timeout (%v, WithTryTimeout): %v", e.key, e.bound, e.err)
}

func (e *tryBoundError) Unwrap() error { return e.err }

// noAnswerError is the cause that ends a try whose store did not answer
// within the try timeout.
type noAnswerError struct {
	key   string
	bound time.Duration
}

func (e *noAnswerError) Error() string {
	return fmt.Sprintf("dsync: try %q: the store did not answer within %v (WithTryTimeout)", e.key, e.bound)
}
