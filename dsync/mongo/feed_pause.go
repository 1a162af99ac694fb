package dsyncmongo

import (
	"context"
	"sync"
)

// Pausing the feed (driver.FeedPauser): while direct hints reach the
// process (dsync/hint), its follower closes its cursor and sends the
// server nothing, so that a process that waits costs FerretDB no
// re-run of the cursor's query every 10 ms; resumed, it opens the
// stream again from scratch, as after a failure, and says Live.

// Pause implements driver.FeedPauser.
func (f *feed) Pause(paused bool) {
	f.mu.Lock()
	t := f.tail
	if t == nil {
		f.pauseFirst = paused
	}
	f.mu.Unlock()
	if t != nil {
		t.pause.set(paused)
	}
}

// pauseState is whether a tailer is paused, and how its follow is cut
// short when it is.
type pauseState struct {
	mu      sync.Mutex
	paused  bool
	resumed chan struct{}      // closed when resumed; made when paused
	cancel  context.CancelFunc // the running follow's; nil between follows
}

func (p *pauseState) init(paused bool) {
	if paused {
		p.paused, p.resumed = true, make(chan struct{})
	}
}

// await waits until the tailer is not paused, and returns the context of
// its next follow, cancelled if it is paused; false if ctx ended first.
func (p *pauseState) await(ctx context.Context) (context.Context, bool) {
	for {
		p.mu.Lock()
		if !p.paused {
			fctx, cancel := context.WithCancel(ctx)
			p.cancel = cancel
			p.mu.Unlock()
			return fctx, true
		}
		c := p.resumed
		p.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// done releases the context of a follow that returned.
func (p *pauseState) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
	}
}

// set pauses the tailer (cutting its follow short) or resumes it.
func (p *pauseState) set(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == paused {
		return
	}
	p.paused = paused
	if !paused {
		close(p.resumed)
		return
	}
	p.resumed = make(chan struct{})
	if p.cancel != nil {
		p.cancel()
	}
}
