package queue

import (
	"context"
	"sync"
)

// brancher is the optional part of a Store that runs requests an engine
// makes side by side. The queue's simulation serves it: its actors make
// one request at a time, so each branch must be an actor of its own there.
// Every other store is served by goroutines (fanOut).
type brancher interface {
	Branch(ctx context.Context, branches []func(context.Context))
}

// fanOut runs each branch with ctx, side by side, and returns when all
// have returned: through the store's Branch if it serves one (brancher),
// else each in a goroutine of its own.
func fanOut(ctx context.Context, store Store, branches []func(context.Context)) {
	if len(branches) == 1 {
		branches[0](ctx)
		return
	}
	if b, ok := store.(brancher); ok {
		b.Branch(ctx, branches)
		return
	}
	var wg sync.WaitGroup
	for _, br := range branches {
		wg.Go(func() { br(ctx) })
	}
	wg.Wait()
}

// Branch runs branches as the store the reader reads does (fanOut).
func (r *reader) Branch(ctx context.Context, branches []func(context.Context)) {
	fanOut(ctx, r.Store, branches)
}
