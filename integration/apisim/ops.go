package apisim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// work runs operations of every primitive, and of the actors, one at a
// time, until the incarnation ends.
func (inc *incarnation) work(who string) {
	w := inc.p.w
	for inc.ctx.Err() == nil {
		if inc.p.waitRunning(inc.ctx) != nil {
			return
		}
		time.Sleep(w.rand(0, inc.p.cfg.TTL))
		if inc.ctx.Err() != nil {
			return
		}
		ctx, done := w.op(inc.ctx)
		if op := inc.actorOp(); op != nil {
			op(ctx, who)
			done()
			continue
		}
		if w.sets && w.chance(setShare) {
			inc.lockSet(ctx, who)
			done()
			continue
		}
		if w.chance(progressShare) {
			inc.progress(ctx, who)
			done()
			continue
		}
		switch x := w.rand(0, 100); {
		case x < 35:
			key := fmt.Sprintf("m%d", x%2)
			if w.chance(0.05) {
				// A key used now and then: idle long enough, a sweep
				// compacts it, and its tokens must still grow.
				key = "rare"
			}
			inc.mutex(ctx, who, key)
		case x < 55:
			inc.rw(ctx, who, "rw")
		case x < 75:
			inc.sem(ctx, who, "sem")
		default:
			inc.once(ctx, who, fmt.Sprintf("once%d", x%2))
		}
		done()
	}
}

// holdFor is how long a holder keeps a hold: mostly under a TTL, now and
// then for several (renewed meanwhile).
func (inc *incarnation) holdFor() time.Duration {
	ttl := inc.p.cfg.TTL
	if inc.p.w.chance(0.2) {
		return inc.p.w.rand(ttl, 4*ttl)
	}
	return inc.p.w.rand(0, ttl)
}

// waitFor is how long a Lock may wait.
func (inc *incarnation) waitFor() time.Duration {
	return inc.p.w.rand(inc.p.cfg.TTL, 8*inc.p.cfg.TTL)
}

// sleepCtx sleeps d or until ctx ends. Like procStore.request, it waits
// on a func timer rather than a timer channel (see there why).
func sleepCtx(ctx context.Context, d time.Duration) {
	done := make(chan struct{})
	t := time.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// unlockCtx bounds an unlock.
func (inc *incarnation) unlockCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*inc.p.cfg.TTL)
}

func (inc *incarnation) mutex(ctx context.Context, who, key string) {
	w := inc.p.w
	m, err := inc.ps.mutex(key)
	if err != nil {
		panic(err)
	}
	try := w.chance(0.15)
	call := time.Now()
	lctx, cancel := context.WithTimeout(ctx, inc.waitFor())
	defer cancel()
	if try {
		err = m.TryLockContext(lctx)
	} else {
		err = m.LockContext(lctx)
		inc.wait(key, call, err)
	}
	w.count(outcome("mutex", err))
	if err != nil {
		return
	}
	h := &Hold{Who: who + "/" + clienthook.OwnerOf(m), Prim: PrimMutex, Key: key, Token: m.Token(), Call: call, Try: try}
	giveUp := inc.hold(h, m.Lost())
	if inc.relocking() {
		if !inc.holdMutex(ctx, m, h, giveUp) {
			return // unlocked by the re-lock's verdict
		}
	} else {
		sleepCtx(ctx, inc.holdFor())
		giveUp()
	}
	uctx, ucancel := inc.unlockCtx()
	defer ucancel()
	_ = m.UnlockContext(uctx)
}

func (inc *incarnation) rw(ctx context.Context, who, key string) {
	w := inc.p.w
	write, try := w.chance(0.35), w.chance(0.1)
	// Half the operations use the worker's value of the key, whose read
	// claim may linger after its last RUnlock; the others a value of their
	// own (dropped after it, with a claim that may linger).
	v, err := inc.rwmutex(who, key, w.chance(0.5))
	if err != nil {
		panic(err)
	}
	prim := PrimRead
	if write {
		prim = PrimWrite
	}
	// A reader reads again now and then right after its RUnlock, within
	// the linger (a third of the TTL) or just past it.
	for again := true; again; again = !write && w.chance(0.4) {
		if !inc.rwOnce(ctx, who, key, v, prim, try) {
			return
		}
		try = w.chance(0.1)
		sleepCtx(ctx, w.rand(0, inc.p.cfg.TTL/2))
		if ctx.Err() != nil {
			return
		}
	}
}

// rwValue is an RWMutex value and whether its read linger is on.
type rwValue struct {
	m       *dsync.RWMutex
	lingers bool
}

// rwmutex returns an RWMutex of key: worker who's, kept for its next
// operations, or a new one. The read linger is opt-in: half the values
// turn it on (drawn from the seed), the others keep RWMutex's default.
func (inc *incarnation) rwmutex(who, key string, kept bool) (rwValue, error) {
	newValue := func() (rwValue, error) {
		lingers := inc.p.w.chance(0.5)
		m, err := inc.ps.rwmutex(key, lingers)
		return rwValue{m, lingers}, err
	}
	if !kept {
		return newValue()
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if v, ok := inc.rws[who+"/"+key]; ok {
		return v, nil
	}
	v, err := newValue()
	if err == nil {
		inc.rws[who+"/"+key] = v
	}
	return v, err
}

// readAgain records h, a read hold, and reports whether its value's last
// read hold had its token (its claim lingered).
func (inc *incarnation) readAgain(h *Hold) bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	again := inc.lastRead[h.Value] == h.Token
	inc.lastRead[h.Value] = h.Token
	return again
}

// rwOnce takes one hold of v, keeps it a while and gives it up; it
// reports whether it held.
func (inc *incarnation) rwOnce(ctx context.Context, who, key string, v rwValue, prim Prim, try bool) bool {
	w, m := inc.p.w, v.m
	write := prim == PrimWrite
	call := time.Now()
	lctx, cancel := context.WithTimeout(ctx, inc.waitFor())
	defer cancel()
	var err error
	switch {
	case write && try:
		err = m.TryLockContext(lctx)
	case write:
		err = m.LockContext(lctx)
	case try:
		err = m.TryRLockContext(lctx)
	default:
		err = m.RLockContext(lctx)
	}
	if !try {
		inc.wait(storedRW(key), call, err)
	}
	w.count(outcome("rw-"+string(prim), err))
	if err != nil {
		return false
	}
	h := &Hold{Who: who + "/" + clienthook.OwnerOf(m), Prim: prim, Key: storedRW(key), Token: m.Token(), Call: call, Try: try}
	if !write && v.lingers {
		// Only a value with the linger on may hold a token again, or
		// take a claim that landed before a writer's (check_tokens.go,
		// check_fifo.go): the others are judged as without it.
		h.Value = clienthook.OwnerOf(m)
		if inc.readAgain(h) {
			w.count("rw-read on its lingering claim")
		}
	}
	giveUp := inc.hold(h, m.Lost())
	sleepCtx(ctx, inc.holdFor())
	giveUp()
	uctx, ucancel := inc.unlockCtx()
	defer ucancel()
	if write {
		_ = m.UnlockContext(uctx)
	} else {
		_ = m.RUnlockContext(uctx)
	}
	return true
}

func (inc *incarnation) sem(ctx context.Context, who, key string) {
	w := inc.p.w
	s, err := inc.ps.semaphore(key)
	if err != nil {
		panic(err)
	}
	n := int64(1)
	if w.chance(0.3) {
		n = 2
	}
	call := time.Now()
	lctx, cancel := context.WithTimeout(ctx, inc.waitFor())
	defer cancel()
	err = s.Acquire(lctx, n)
	w.count(outcome("semaphore", err))
	if err != nil {
		return
	}
	giveUp := inc.hold(&Hold{Who: who + "/" + clienthook.OwnerOf(s), Prim: PrimSem, Key: storedSem(key), Token: s.Token(), Call: call, Weight: n, Limit: inc.p.cfg.Limit}, s.Lost())
	sleepCtx(ctx, inc.holdFor())
	giveUp()
	uctx, ucancel := inc.unlockCtx()
	defer ucancel()
	_ = s.ReleaseContext(uctx, n)
}

func (inc *incarnation) once(ctx context.Context, who, key string) {
	w := inc.p.w
	o, err := inc.ps.once(key)
	if err != nil {
		panic(err)
	}
	d := &Do{Proc: inc.p.id, Key: storedOnce(key), Call: time.Now()}
	lctx, cancel := context.WithTimeout(ctx, inc.waitFor())
	defer cancel()
	err = o.Do(lctx, func(fctx context.Context) error {
		tok, _ := dsync.TokenOf(fctx)
		r := &Run{Proc: inc.p.id, Key: d.Key, Token: tok, Start: time.Now()}
		w.mu.Lock()
		w.hist.Runs = append(w.hist.Runs, r)
		w.mu.Unlock()
		d.Run = r
		lost := make(chan struct{})
		stop := context.AfterFunc(fctx, func() {
			if errors.Is(context.Cause(fctx), dsync.ErrLost) {
				close(lost)
			}
		})
		giveUp := inc.hold(&Hold{Who: who + "/once", Prim: PrimOnce, Key: d.Key, Token: tok, Call: d.Call}, lost)
		sleepCtx(fctx, inc.holdFor())
		fails := w.chance(0.25)
		giveUp()
		stop()
		r.End = time.Now()
		if fctx.Err() != nil {
			return context.Cause(fctx)
		}
		if fails {
			return errors.New("f failed")
		}
		r.OK = true
		return nil
	})
	d.Return, d.Err = time.Now(), err
	w.mu.Lock()
	w.hist.Dos = append(w.hist.Dos, d)
	w.mu.Unlock()
	w.count(outcome("once", err))
}

// outcome names an operation's outcome for the figures.
func outcome(op string, err error) string {
	switch {
	case err == nil:
		return op + " ok"
	case errors.Is(err, dsync.ErrSpan):
		return op + " refused (span)"
	case errors.Is(err, dsync.ErrHeld):
		return op + " held"
	case errors.Is(err, dsync.ErrUnconfirmed), errors.Is(err, dsync.ErrRanTwice):
		return op + " unconfirmed"
	default:
		return op + " failed"
	}
}
