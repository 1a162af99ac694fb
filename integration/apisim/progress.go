package apisim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// The stalled-holder actor: a worker takes a Mutex, an RWMutex's write
// lock or a Semaphore's units with a progress deadline
// (dsync.WithProgressDeadline) and reports progress while it works; now
// and then it stops reporting and keeps "working" until Lost() closes.
// Half the incarnations' candidates lead so too (leader's
// WithProgressDeadline, election.go).
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
			lost: m.Lost, report: m.Progress, err: m.Err, token: m.Token, owner: clienthook.OwnerOf(m)}
	case 1:
		m, err := inc.ps.progressRWMutex("rw", d)
		if err != nil {
			panic(err)
		}
		return progressValue{prim: PrimWrite, key: storedRW("rw"), lock: m.LockContext, unlock: m.UnlockContext,
			lost: m.Lost, report: m.Progress, err: m.Err, token: m.Token, owner: clienthook.OwnerOf(m)}
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
			lost:   s.Lost, report: s.Progress, err: s.Err, token: s.Token, owner: clienthook.OwnerOf(s)}
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
	if inc.progressWork(ctx, v.lost(), v.report, log, h.Start) {
		inc.stalled(log, errors.Is(v.err(), dsync.ErrStalled))
	}
	giveUp()
	uctx, ucancel := inc.unlockCtx()
	defer ucancel()
	_ = v.unlock(uctx)
}

// progressWork is the work under a hold that began at start with a
// progress deadline (log.D): it reports progress (report) every 0 to
// d/2 for a while, and now and then stops reporting and keeps working
// until lost closes (bounded, for a deadline that never fires), or until
// ctx ends. It logs its reports, the hold's start first, and reports
// whether lost closed.
func (inc *incarnation) progressWork(ctx context.Context, lost <-chan struct{}, report func(), log *ProgressLog, start time.Time) bool {
	w := inc.p.w
	d, ttl := log.D, log.TTL
	w.mu.Lock()
	log.Reports = append(log.Reports, start)
	w.mu.Unlock()
	work := w.rand(d/2, 3*ttl)
	end := start.Add(work)
	stops := w.chance(0.4)
	stopAt := start.Add(w.rand(0, work))
	for ctx.Err() == nil {
		gap := w.rand(0, d/2)
		if stops && time.Now().Add(gap).After(stopAt) {
			w.count("progress stopped reporting")
			return waitLost(ctx, lost, d+3*ttl)
		}
		if !time.Now().Add(gap).Before(end) || waitLost(ctx, lost, gap) {
			break
		}
		// A paused process runs no code: it reports when it resumes.
		if inc.p.waitRunning(ctx) != nil {
			break
		}
		select {
		case <-lost:
			return true
		default:
		}
		t := time.Now()
		report()
		w.mu.Lock()
		log.Reports = append(log.Reports, t)
		w.mu.Unlock()
	}
	select {
	case <-lost:
		return true
	default:
		return false
	}
}

// stalled logs whether a hold whose Lost() closed was stalled.
func (inc *incarnation) stalled(log *ProgressLog, stalled bool) {
	w := inc.p.w
	w.mu.Lock()
	log.Stalled = stalled
	w.mu.Unlock()
	if stalled {
		w.count("progress stalled")
	}
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
