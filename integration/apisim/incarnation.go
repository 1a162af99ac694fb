package apisim

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// incarnation is a process's life between two restarts: one Client, its
// workers and its candidate.
type incarnation struct {
	p      *proc
	n      int // which of p's incarnations, from 1
	ps     *parts
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// actorOps are the world's actors' operations on this incarnation.
	actorOps []func(ctx context.Context, who string)

	mu      sync.Mutex
	active  map[*Hold]struct{} // holds not yet given up
	closeAt time.Time
	// rws: an RWMutex value per worker and key, which RLocks again after
	// its RUnlock (taking its lingering read claim, if its linger is on).
	// Not shared between workers: Token says the newest read hold's,
	// which would be another worker's.
	rws map[string]rwValue
	// lastRead: the token of each lingering RWMutex value's last read
	// hold.
	lastRead map[string]uint64
}

// start makes a new incarnation of p and starts its workers.
func (p *proc) start(workers int) (*incarnation, error) {
	ps, err := build(p)
	if err != nil {
		return nil, err
	}
	inc := &incarnation{p: p, ps: ps, active: make(map[*Hold]struct{}), rws: make(map[string]rwValue), lastRead: make(map[string]uint64)}
	p.w.mu.Lock()
	p.incs++
	inc.n = p.incs
	p.w.mu.Unlock()
	inc.ctx, inc.cancel = context.WithCancel(context.Background())
	inc.startActors()
	for i := range workers {
		inc.wg.Add(1)
		go func() {
			defer inc.wg.Done()
			inc.work(fmt.Sprintf("p%d.w%d", p.id, i))
		}()
	}
	inc.wg.Add(1)
	go func() {
		defer inc.wg.Done()
		inc.campaign()
	}()
	inc.startWatchers()
	return inc, nil
}

// stop closes the incarnation's Client (its holds end as Close begins)
// and waits for its workers.
func (inc *incarnation) stop() {
	now := time.Now()
	inc.mu.Lock()
	inc.closeAt = now
	for h := range inc.active {
		inc.p.w.end(h, now)
	}
	inc.mu.Unlock()
	inc.cancel()
	inc.ps.close()
	inc.wg.Wait()
}

// hold records a hold that began now, and watches lost for its loss
// until the returned function is called, as its holder gives it up.
func (inc *incarnation) hold(h *Hold, lost <-chan struct{}) (giveUp func()) {
	w := inc.p.w
	release := w.holdOf(inc.p, h, lost)
	inc.mu.Lock()
	closing := !inc.closeAt.IsZero()
	inc.active[h] = struct{}{}
	inc.mu.Unlock()
	if closing {
		w.end(h, time.Now())
	}
	return func() {
		// A paused process runs no code: its holder gives up when it
		// resumes.
		inc.p.waitRunning(context.Background())
		w.end(h, time.Now())
		inc.mu.Lock()
		delete(inc.active, h)
		inc.mu.Unlock()
		release()
	}
}

// end records that h's holder began to give it up at t (the first time).
func (w *world) end(h *Hold, t time.Time) {
	w.mu.Lock()
	first := h.Ended.IsZero()
	if first {
		h.Ended = t
	}
	w.mu.Unlock()
	if first {
		w.tracef("p%d END #%d %s#%d", h.Proc, h.ID, h.Key, h.Token)
	}
}

func (w *world) lost(h *Hold, t time.Time) {
	w.mu.Lock()
	first := h.LostAt.IsZero()
	if first {
		h.LostAt = t
	}
	w.mu.Unlock()
	if first {
		w.tracef("p%d LOST #%d %s#%d", h.Proc, h.ID, h.Key, h.Token)
	}
}
