// Package ctxerr words what a dsync call returns when its context ends:
// the context's cause, unchanged, unless the store was failing. A store
// call that was in flight when the context ended, and failed because it
// did, is no store failure: that the caller stopped is all it says.
package ctxerr

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Ended is the error of a call that says only that its context ended:
// the driver returned the context's own error or cause (it had nothing to
// add), or the call was a wait that ctx cut short.
type Ended struct {
	Where string // such as `dsync: claim "k"`
	Cause error  // context.Cause of the call's context
}

func (e *Ended) Error() string { return e.Where + ": " + e.Cause.Error() }
func (e *Ended) Unwrap() error { return e.Cause }

// EndedBy returns an *Ended for err, from a call made under ctx at where,
// if err is only ctx's end; otherwise nil.
func EndedBy(ctx context.Context, where string, err error) error {
	if ctx.Err() == nil || (err != ctx.Err() && err != context.Cause(ctx)) {
		return nil
	}
	return &Ended{Where: where, Cause: context.Cause(ctx)}
}

// saysMore reports whether err, the error of a store call that was in
// flight when ctx ended, says more than that ctx ended. A cancelled ctx
// is the caller's decision to stop: whatever a call it cut short says is
// about being stopped (a driver's "connection ... context canceled").
// When ctx's deadline passed, a driver that says why its call had no
// answer (no server reachable, say) tells the caller why the wait ran
// out, unless it said nothing but the context's error.
func saysMore(ctx context.Context, err error) bool {
	var e *Ended
	switch {
	case err == nil, errors.As(err, &e), err == ctx.Err(), err == context.Cause(ctx):
		return false
	case errors.Is(ctx.Err(), context.Canceled):
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.Cause(ctx))
	}
	return true
}

// Cause is what an acquire returns when ctx ends: its cause, unchanged,
// unless attempts were failing. failed is the last store error met while
// ctx lived, nil if none; cut is the error of the call in flight when ctx
// ended, nil if none, which counts only if it says more than that ctx
// ended (saysMore).
func Cause(ctx context.Context, failed, cut error) error {
	cause := context.Cause(ctx)
	last := failed
	if last == nil && saysMore(ctx, cut) {
		last = cut
	}
	if last == nil || last == cause || last.Error() == cause.Error() {
		return cause
	}
	return &LastStore{Cause: cause, Last: last}
}

// LastStore is a context's cause together with the store error that kept
// the acquire from holding before the context ended.
type LastStore struct{ Cause, Last error }

func (e *LastStore) Error() string {
	return fmt.Sprintf("%v (last store error: %v)", e.Cause, e.Last)
}

func (e *LastStore) Unwrap() []error { return []error{e.Cause, e.Last} }

// TryBound is a try that its bound ended while a store call was out, and
// what the store said of that call.
type TryBound struct {
	Key   string
	Bound time.Duration
	Err   error
}

func (e *TryBound) Error() string {
	return fmt.Sprintf("dsync: try %q: stopped at the try timeout (%v, ClientWithTryTimeout): %v", e.Key, e.Bound, e.Err)
}

func (e *TryBound) Unwrap() error { return e.Err }

// NoAnswer is the cause that ends a try whose store did not answer within
// the try timeout.
type NoAnswer struct {
	Key   string
	Bound time.Duration
}

func (e *NoAnswer) Error() string {
	return fmt.Sprintf("dsync: try %q: the store did not answer within %v (ClientWithTryTimeout)", e.Key, e.Bound)
}
