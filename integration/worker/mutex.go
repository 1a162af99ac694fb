package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// runMutex locks the worker's key in a loop, or with Config.Keys above 0
// each of its keys (KeyOf, from the First-th) in a loop of its own, each
// with a Mutex of its own on the worker's one Client: many holders (or
// waiters) behind one session, as a process that locks many keys is.
func (w *worker) runMutex(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	if cfg.Keys > 0 && cfg.Register != "" {
		return errors.New("a register goes with one key: Keys and Register cannot both be set")
	}
	backend, _, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	if cfg.Keys == 0 {
		return w.mutexLoop(ctx, backend, cfg.Key)
	}
	errs := make([]error, cfg.Keys)
	var wg sync.WaitGroup
	for i := range cfg.Keys {
		wg.Go(func() { errs[i] = w.mutexLoop(ctx, backend, KeyOf(cfg.Key, cfg.First+i)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mutexLoop locks key, holds it a while, and unlocks it (mutexHold),
// until told to stop or Config.Holds holds are done.
func (w *worker) mutexLoop(ctx context.Context, backend *dsync.Client, key string) error {
	cfg := &w.cfg
	mu, err := dsync.NewMutex(backend, key)
	if err != nil {
		return err
	}
	for n := 0; cfg.Holds == 0 || n < cfg.Holds; n++ {
		if err := mu.LockContext(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := w.mutexHold(ctx, mu, key); err != nil || ctx.Err() != nil {
			return err
		}
		if !sleepCtx(ctx, cfg.Gap) {
			return nil
		}
	}
	return nil
}

// mutexHold records the hold mu has just taken of key, works under it,
// and unlocks it. With Config.Relock, a hold lost to a suspension of its
// session is taken back instead (LockContext again, without Unlock), as
// long as the outage does not end it: the hold taken back is recorded as
// a hold of its own, and unlocked in turn. It returns with mu unlocked,
// or with ctx ended.
func (w *worker) mutexHold(ctx context.Context, mu *dsync.Mutex, key string) error {
	cfg := &w.cfg
	h, deadline, stopWatch := w.beginMutexHold(mu, key)
	for {
		w.criticalSection(ctx, h)
		h.end(deadline, history.SrcLib)
		if !cfg.Relock || !h.isLost() || !errors.Is(mu.Err(), dsync.ErrSuspended) {
			break
		}
		stopWatch()
		w.rec.forget(key, h.token)
		err := w.relock(ctx, mu, key, h.token)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, dsync.ErrLost):
			return nil // the outage ended the hold, and mu is unlocked
		case err != nil:
			return err
		}
		h, deadline, stopWatch = w.beginMutexHold(mu, key)
	}
	if cfg.UnlockWindow > 0 {
		w.emit(history.Event{Ev: history.EvUnlockWindow, Key: key, Token: h.token})
		time.Sleep(cfg.UnlockWindow)
	}
	// The released event carries the time Unlock was called and the
	// deadline in force then: an Unlock called after the deadline must
	// report ErrLost (the hold was lost before the call).
	dl, called := deadline(), history.Now()
	uctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
	err := mu.UnlockContext(uctx)
	cancel()
	stopWatch()
	w.emit(history.Event{Ev: history.EvReleased, Key: key, Token: h.token, T: called, DL: dl, Src: history.SrcLib,
		Lost: errors.Is(err, dsync.ErrLost), Err: errString(err)})
	w.rec.forget(key, h.token)
	return nil
}

// beginMutexHold records that mu holds key, and watches its loss signal.
func (w *worker) beginMutexHold(mu *dsync.Mutex, key string) (h *hold, deadline func() int64, stopWatch func()) {
	cfg := &w.cfg
	h = &hold{w: w, key: key, token: mu.Token()}
	w.rec.holding(key, h.token, history.Now())
	w.emit(history.Event{Ev: history.EvAcquire, Owner: clienthook.OwnerOf(mu), Key: key, Token: h.token,
		DL: history.Mono(mu.ValidUntil()), Src: history.SrcLib, TTL: int64(cfg.TTL), Margin: int64(cfg.TTL / 20)})
	deadline = func() int64 { return history.Mono(mu.ValidUntil()) }
	return h, deadline, h.watch(mu.Lost(), deadline, history.SrcLib)
}

// relock takes back mu's hold of token, lost to a suspension: LockContext
// without Unlock, which waits for the store's verdict on the outage. It
// records the attempt (EvRelock) and returns LockContext's error.
func (w *worker) relock(ctx context.Context, mu *dsync.Mutex, key string, token uint64) error {
	called := history.Now()
	err := mu.LockContext(ctx)
	ev := history.Event{Ev: history.EvRelock, Key: key, Token: token, T: called, End: history.Now(), Err: errString(err)}
	if err == nil {
		ev.Value = int64(mu.Token())
	}
	w.emit(ev)
	return err
}
