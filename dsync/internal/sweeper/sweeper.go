// Package sweeper runs a dsync Client's sweeps of idle keys in the
// background: one goroutine that calls its sweep about once per bucket
// span, at a random phase (each pause drawn from [span/2, 3·span/2)) so
// that processes started together do not all try at once.
//
// The contract: Start starts the goroutine at most once, and never after
// Stop; Stop cancels the context the sweeps run under, and the goroutine
// returns at its next pause (the caller waits for it on the WaitGroup it
// gave Start). What a sweep does, and the lock under which one process
// sweeps at a time, are the caller's (dsync/sweep.go).
package sweeper

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// A Sweeper runs one Client's sweeps. Its zero value is ready, not
// started.
type Sweeper struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped bool
}

// Start starts the sweeps, unless s was stopped or started already: a
// goroutine, counted in running, that calls sweep about once per span
// (read once, as it starts) until Stop.
func (s *Sweeper) Start(running *sync.WaitGroup, span func() time.Duration, sweep func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	running.Add(1)
	go func() {
		defer running.Done()
		loop(ctx, span(), sweep)
	}()
}

// Stop stops the sweeps, and any Start after it.
func (s *Sweeper) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
	}
}

// loop sweeps about once per span, at a random phase, until ctx ends.
func loop(ctx context.Context, span time.Duration, sweep func(ctx context.Context)) {
	for {
		wait := span/2 + time.Duration(rand.Int64N(int64(span)))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		sweep(ctx)
	}
}
