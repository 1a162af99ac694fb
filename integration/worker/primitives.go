package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// The modes of the primitives that share a key: an RWMutex (readers
// share, a writer excludes everyone; writers increment the register) and
// a Semaphore (holds of 1 or 2 units of SemLimit; no register, since its
// holders run at once). Each worker takes one hold at a time, recorded
// as a Mutex's is, with the hold's mode, weight and limit.
const (
	ModeRWMutex   = "rwmutex"
	ModeSemaphore = "semaphore"
)

// SemLimit is the limit of the semaphore workers.
const SemLimit = 3

// readShare is how many of an RWMutex worker's holds are reads.
const readShare = 0.7

// StoredKey is the key, as stored, that workers of mode lock for key.
func StoredKey(mode, key string) string {
	switch mode {
	case ModeRWMutex:
		return "dsync:rw/" + key
	case ModeSemaphore:
		return "dsync:sem/" + key
	}
	return key
}

// held is what a worker needs of the hold it has.
type held interface {
	Token() uint64
	ValidUntil() time.Time
	Lost() <-chan struct{}
}

// shared runs the loop of an RWMutex or Semaphore worker.
func (w *worker) runShared(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	backend, _, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	var (
		rw  *dsync.RWMutex
		sem *dsync.Semaphore
	)
	owner := ""
	if cfg.Mode == ModeRWMutex {
		if rw, err = dsync.NewRWMutex(backend, cfg.Key); err != nil {
			return err
		}
		owner = clienthook.OwnerOf(rw)
	} else {
		if sem, err = dsync.NewSemaphore(backend, cfg.Key, SemLimit); err != nil {
			return err
		}
		owner = clienthook.OwnerOf(sem)
	}
	key := StoredKey(cfg.Mode, cfg.Key)
	for n := 0; cfg.Holds == 0 || n < cfg.Holds; n++ {
		var (
			p             held
			mode          string
			weight, limit int64
			write         bool
			release       func(context.Context) error
		)
		switch {
		case rw != nil && rand.Float64() >= readShare:
			err, p, write, release = rw.LockContext(ctx), rw, true, rw.UnlockContext
		case rw != nil:
			err, p, mode, release = rw.RLockContext(ctx), rw, history.ModeShared, rw.RUnlockContext
		default:
			weight, limit, mode = 1+rand.Int64N(2), SemLimit, history.ModeWeighted
			err, p = sem.Acquire(ctx, weight), sem
			release = func(ctx context.Context) error { return sem.ReleaseContext(ctx, weight) }
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		h := &hold{w: w, key: key, token: p.Token()}
		w.rec.holding(key, h.token, history.Now())
		w.emit(history.Event{Ev: history.EvAcquire, Owner: owner, Key: key, Token: h.token,
			DL: history.Mono(p.ValidUntil()), Src: history.SrcLib, TTL: int64(cfg.TTL), Margin: int64(cfg.TTL / 20),
			Mode: mode, Weight: weight, Limit: limit})
		deadline := func() int64 { return history.Mono(p.ValidUntil()) }
		stopWatch := h.watch(p.Lost(), deadline, history.SrcLib)

		if write {
			w.criticalSection(ctx, h)
		} else {
			w.holdOn(ctx, h)
		}

		h.end(deadline, history.SrcLib)
		dl, called := deadline(), history.Now()
		uctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
		err = release(uctx)
		cancel()
		stopWatch()
		w.emit(history.Event{Ev: history.EvReleased, Key: key, Token: h.token, T: called, DL: dl, Src: history.SrcLib,
			Lost: errors.Is(err, dsync.ErrLost), Err: errString(err)})
		w.rec.forget(key, h.token)
		if !sleepCtx(ctx, cfg.Gap) {
			return nil
		}
	}
	return nil
}

// holdOn keeps a hold that writes nothing for a while (until a SIGUSR2,
// at most).
func (w *worker) holdOn(ctx context.Context, h *hold) {
	until := time.Now().Add(time.Duration(float64(w.cfg.HoldFor) * (0.5 + rand.Float64())))
	ends := w.endHolds.Load()
	for time.Now().Before(until) && !h.isLost() && ctx.Err() == nil && w.endHolds.Load() == ends {
		sleepCtx(ctx, min(10*time.Millisecond, time.Until(until)))
	}
}
