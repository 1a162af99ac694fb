package apisim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// The stalled-holder actor: a worker takes a Mutex, an RWMutex's write
// lock or a Semaphore's units with a progress deadline
// (dsync.WithProgressDeadline) and reports progress while it works; now
// and then it stops reporting and keeps "working" until Lost() closes.
// CheckProgress (check_progress.go) judges the deadline's promises. (In
// this package "stall" names requests held back, stall.go; the actor
// says "progress".)

// progressShare is the chance that a worker's next operation is the
// stalled-holder actor's.
const progressShare = 0.12

// ProgressLog is what a hold with a progress deadline saw of it.
type ProgressLog struct {
	// D is the deadline, and TTL its process's lease TTL.
	D, TTL time.Duration
	// Reports are when its work reported progress, the hold's start
	// first (taking a hold counts as a report).
	Reports []time.Time
	// Stalled: Lost() closed, and Err said ErrStalled.
	Stalled bool
}

// Wait is one blocking Lock (not a try) of a Mutex or an RWMutex, for
// the handoff after a stall (CheckProgress).
type Wait struct {
	Proc         int
	Key          string // as stored
	Call, Return time.Time
	OK           bool
}

// wait records a blocking Lock of key that was called at call and
// returned now.
func (inc *incarnation) wait(key string, call time.Time, err error) {
	w := inc.p.w
	w.mu.Lock()
	w.hist.Waits = append(w.hist.Waits, &Wait{Proc: inc.p.id, Key: key, Call: call, Return: time.Now(), OK: err == nil})
	w.mu.Unlock()
}

// progressValue is what the actor needs of a Mutex, RWMutex or
// Semaphore.
type progressValue struct {
	prim   Prim
	key    string // as stored
	lock   func(ctx context.Context) error
	unlock func(ctx context.Context) error
	lost   func() <-chan struct{}
	report func()
	err    func() error
	token  func() uint64
	owner  string
	weight int64
}

// progressValueOf makes a value of one of the three primitives, drawn,
// with a progress deadline of d.
func (inc *incarnation) progressValueOf(d time.Duration) progressValue {
	w := inc.p.w
	switch x := w.rand(0, 3); x {
	case 0:
		key := fmt.Sprintf("m%d", w.rand(0, 2))
		m, err := inc.ps.progressMutex(key, d)
		if err != nil {
			panic(err)
		}
		return progressValue{prim: PrimMutex, key: key, lock: m.LockContext, unlock: m.UnlockContext,
			lost: m.Lost, report: m.Progress, err: m.Err, token: m.Token, owner: m.Owner()}
	case 1:
		m, err := inc.ps.progressRWMutex("rw", d)
		if err != nil {
			panic(err)
		}
		return progressValue{prim: PrimWrite, key: storedRW("rw"), lock: m.LockContext, unlock: m.UnlockContext,
			lost: m.Lost, report: m.Progress, err: m.Err, token: m.Token, owner: m.Owner()}
	default:
		s, err := inc.ps.progressSemaphore("sem", d)
		if err != nil {
			panic(err)
		}
		n := int64(1)
		if w.chance(0.3) {
			n = 2
		}
		return progressValue{prim: PrimSem, key: storedSem("sem"), weight: n,
			lock:   func(ctx context.Context) error { return s.Acquire(ctx, n) },
			unlock: func(ctx context.Context) error { return s.ReleaseContext(ctx, n) },
			lost:   s.Lost, report: s.Progress, err: s.Err, token: s.Token, owner: s.Owner()}
	}
}

// progress is one operation of the stalled-holder actor.
func (inc *incarnation) progress(ctx context.Context, who string) {
	w := inc.p.w
	ttl := inc.p.cfg.TTL
	d := max(w.rand(3*ttl/10, 2*ttl), dsync.MinTTL)
	v := inc.progressValueOf(d)
	call := time.Now()
	lctx, cancel := context.WithTimeout(ctx, inc.waitFor())
	defer cancel()
	err := v.lock(lctx)
	if v.prim != PrimSem {
		inc.wait(v.key, call, err)
	}
	w.count(outcome("progress-"+string(v.prim), err))
	if err != nil {
		return
	}
	v.report()
	log := &ProgressLog{D: d, TTL: ttl}
	h := &Hold{Who: who + "/" + v.owner, Prim: v.prim, Key: v.key, Token: v.token(), Call: call, Progress: log}
	if v.prim == PrimSem {
		h.Weight, h.Limit = v.weight, inc.p.cfg.Limit
	}
	giveUp := inc.hold(h, v.lost())
	w.mu.Lock()
	log.Reports = append(log.Reports, h.Start)
	w.mu.Unlock()

	lost := v.lost()
	work := w.rand(d/2, 3*ttl)
	end := h.Start.Add(work)
	stops := w.chance(0.4)
	stopAt := h.Start.Add(w.rand(0, work))
	for ctx.Err() == nil {
		gap := w.rand(0, d/2)
		if stops && time.Now().Add(gap).After(stopAt) {
			// The work stops reporting and keeps working until it is
			// told to stop (bounded, for a deadline that never fires).
			w.count("progress stopped reporting")
			waitLost(ctx, lost, d+3*ttl)
			break
		}
		if !time.Now().Add(gap).Before(end) {
			break
		}
		if waitLost(ctx, lost, gap) {
			break
		}
		// A paused process runs no code: it reports when it resumes.
		if inc.p.waitRunning(ctx) != nil {
			break
		}
		select {
		case <-lost:
		default:
			t := time.Now()
			v.report()
			w.mu.Lock()
			log.Reports = append(log.Reports, t)
			w.mu.Unlock()
			continue
		}
		break
	}
	select {
	case <-lost:
		stalled := errors.Is(v.err(), dsync.ErrStalled)
		w.mu.Lock()
		log.Stalled = stalled
		w.mu.Unlock()
		if stalled {
			w.count("progress stalled")
		}
	default:
	}
	giveUp()
	uctx, ucancel := inc.unlockCtx()
	defer ucancel()
	_ = v.unlock(uctx)
}

// waitLost waits d, or until lost closes or ctx ends; it reports whether
// lost closed.
func waitLost(ctx context.Context, lost <-chan struct{}, d time.Duration) bool {
	// A func timer, as sleepCtx's.
	done := make(chan struct{})
	t := time.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-lost:
		return true
	case <-done:
	case <-ctx.Done():
	}
	select {
	case <-lost:
		return true
	default:
		return false
	}
}
