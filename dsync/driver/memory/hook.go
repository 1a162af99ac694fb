package memory

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A Call is one request to a view of a Store, as a Hook sees it. Every call
// of the driver's contract that takes a context (of Store and of its Roles)
// is one. It is named by its method, with the arguments a hook needs to
// tell calls apart.
type Call struct {
	// Op is the method called: "Insert", "GetRun", "Publish", ...
	Op string
	// Write: the call may change the store. A write whose sender gave up
	// on it may still land, if its hook serves it later.
	Write bool
	// Docs: the documents of Insert (one), InsertOrdered and InsertEach.
	Docs []driver.Doc
	// IDs: the ID of Get, the IDs of Delete.
	IDs []string
	// Keys: the keys of PutKeys; the key of GetRun and HasKey; the prefix
	// of ListKeys; the set of LatestWait.
	Keys []string
	// From, To: the epochs of GetRun.
	From, To uint64
	// Session: the session of InsertSession; for RenewSession and
	// RenewSessionUp its ID, Gen and ExpiresAt; for GetSession, Revoke and Revoked its ID; for
	// RecordStall, RecordOutage, PutWait and PutDeadlock the record's session.
	Session driver.Session
	// Event: what Publish publishes.
	Event driver.Event
}

// A Hook sees every call of a view (Store.Intercept) before the view serves
// it. It may delay it, fail it, or let it land late. serve serves the call
// (through the hooks installed before this one) and returns the error it
// got there. However often it is called, it serves the call once.
//
// A Hook that returns nil lets the call go on: the view serves it, unless
// the hook did, and returns its results. If the call's context ended while
// the hook held it, the call fails with the context's cause, unsent. A Hook
// that returns an error fails the call with it, and the caller gets no
// result: the call was applied only if the hook served it (its reply was
// lost) or serves it later (a write that lands after its sender gave up). A
// call whose context has ended before it was made is never sent: no hook
// sees it.
type Hook func(ctx context.Context, c Call, serve func() error) error

// Intercept returns a view of s on which h sees every call first. h sees it
// before the call goes on to s's own hooks (a Process's), if any. The view
// serves tests that count, delay or fail some calls. Its calls of every
// role (its Roles) pass the hook as well. The view shares s's documents,
// sessions, feed and clock, as another client of one database would.
func (s *Store) Intercept(h Hook) *Store {
	return &Store{state: s.state, hooks: append(slices.Clip(s.hooks), h)}
}

// do serves c, applied to the store by op, through the view's hooks: it
// returns ctx's cause if ctx has ended (the call is never sent), else the
// error a hook failed it with, else nil once op has run.
func (s *Store) do(ctx context.Context, c Call, op func()) error {
	if err := live(ctx); err != nil {
		return err
	}
	return s.through(len(s.hooks), ctx, c, op)
}

// through serves c through the first n hooks, the last of them first.
func (s *Store) through(n int, ctx context.Context, c Call, op func()) error {
	if n == 0 {
		op()
		return nil
	}
	var (
		once   sync.Once
		served atomic.Bool
		err    error
	)
	serve := func() error {
		once.Do(func() {
			err = s.through(n-1, ctx, c, op)
			served.Store(true)
		})
		return err
	}
	if err := s.hooks[n-1](ctx, c, serve); err != nil {
		return err
	}
	if err := live(ctx); err != nil && !served.Load() {
		return err
	}
	return serve()
}

func live(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
