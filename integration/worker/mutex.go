package worker

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/clienthook"
)

func (w *worker) runMutex(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	backend, _, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	mu, err := dsync.NewMutex(backend, cfg.Key)
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
		h := &hold{w: w, key: cfg.Key, token: mu.Token()}
		w.rec.holding(cfg.Key, h.token, history.Now())
		w.emit(history.Event{Ev: history.EvAcquire, Owner: clienthook.OwnerOf(mu), Key: cfg.Key, Token: h.token,
			DL: history.Mono(mu.ValidUntil()), Src: history.SrcLib, TTL: int64(cfg.TTL), Margin: int64(cfg.TTL / 20)})
		deadline := func() int64 { return history.Mono(mu.ValidUntil()) }
		stopWatch := h.watch(mu.Lost(), deadline, history.SrcLib)

		w.criticalSection(ctx, h)

		h.end(deadline, history.SrcLib)
		if cfg.UnlockWindow > 0 {
			w.emit(history.Event{Ev: history.EvUnlockWindow, Key: cfg.Key, Token: h.token})
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
		w.emit(history.Event{Ev: history.EvReleased, Key: cfg.Key, Token: h.token, T: called, DL: dl, Src: history.SrcLib,
			Lost: errors.Is(err, dsync.ErrLost), Err: errString(err)})
		w.rec.forget(cfg.Key, h.token)
		if !sleepCtx(ctx, cfg.Gap) {
			return nil
		}
	}
	return nil
}
