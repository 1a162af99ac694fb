package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
)

// ModeOnce: the worker runs dsync.Once.Do on slot keys, a new one every
// OnceSlot ("KEY-<n>"), as replicas running a scheduled job once per slot
// would. Its function fails one run in five and runs long (two TTLs) one
// in ten, so that faults hit it mid-run. It records, for the checker's
// Once rules (history.checkOnce): each run, when the read under its hold
// that found no record was sent (EvOnceRun, seen by the recording
// store); each success before it returns (EvOnceOK); each Do that
// returned nil, with the token of the record, as a confirmation if it ran
// the function (EvOnceDone) or as a sighting if not (EvOnceSkip).
const ModeOnce = "once"

// OnceSlot is how long a slot key of ModeOnce is current.
const OnceSlot = time.Second

var errRunFailed = errors.New("the run failed (on purpose)")

func (w *worker) runOnce(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	backend, _, err := w.client(db)
	if err != nil {
		return err
	}
	defer backend.Close()
	for n := 0; cfg.Holds == 0 || n < cfg.Holds; n++ {
		slot := time.Now().UnixNano() / int64(OnceSlot)
		key := fmt.Sprintf("%s-%d", cfg.Key, slot)
		stored := "dsync:once/" + key
		once, err := dsync.NewOnce(backend, key)
		if err != nil {
			return err
		}
		ran := false
		err = once.Do(ctx, func(fctx context.Context) error {
			ran = true
			token, _ := dsync.TokenOf(fctx)
			w.emit(history.Event{Ev: history.EvOnceRun, Key: stored, Token: token, T: w.rec.done(stored).readSent})
			d := time.Duration(20+rand.IntN(80)) * time.Millisecond
			if rand.IntN(10) == 0 {
				d = 2 * cfg.TTL
			}
			if !sleepCtx(fctx, d) {
				return context.Cause(fctx)
			}
			if rand.IntN(5) == 0 {
				return errRunFailed
			}
			w.emit(history.Event{Ev: history.EvOnceOK, Key: stored, Token: token})
			return nil
		})
		switch {
		case err == nil && ran:
			w.emit(history.Event{Ev: history.EvOnceDone, Key: stored, Token: w.rec.done(stored).token})
		case err == nil:
			w.emit(history.Event{Ev: history.EvOnceSkip, Key: stored, Token: w.rec.done(stored).token})
		case ctx.Err() != nil:
			return nil
		default:
			w.logger.Info("once", "key", key, "err", err)
		}
		// The next slot, or this one again after a failure.
		next := time.Unix(0, (slot+1)*int64(OnceSlot))
		if err != nil {
			next = time.Now().Add(cfg.Gap)
		}
		if !sleepCtx(ctx, time.Until(next)+time.Duration(rand.IntN(20))*time.Millisecond) {
			return nil
		}
	}
	return nil
}
