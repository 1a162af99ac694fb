package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/register"
)

// criticalSection does one read-modify-write of the register, then keeps
// the hold for a while (until a SIGUSR2, at most). valid is checked before
// the write; a pause in the window after it is what fencing is for.
func (w *worker) criticalSection(ctx context.Context, h *hold) {
	cfg := &w.cfg
	until := time.Now().Add(time.Duration(float64(cfg.HoldFor) * (0.5 + rand.Float64())))
	ends := w.endHolds.Load()
	if w.reg != nil {
		w.readModifyWrite(h)
	}
	for time.Now().Before(until) && !h.isLost() && ctx.Err() == nil && w.endHolds.Load() == ends {
		sleepCtx(ctx, min(10*time.Millisecond, time.Until(until)))
	}
}

func (w *worker) readModifyWrite(h *hold) {
	cfg := &w.cfg
	rctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
	v, err := w.reg.Read(rctx, h.token)
	cancel()
	if err != nil {
		w.logger.Info("register read failed", "token", h.token, "err", err)
		return
	}
	for end := time.Now().Add(cfg.Work); time.Now().Before(end) && !h.isLost(); {
		time.Sleep(min(5*time.Millisecond, time.Until(end)))
	}
	if h.isLost() {
		return
	}
	if cfg.Window > 0 {
		w.emit(history.Event{Ev: history.EvWindow, Key: h.key, Token: h.token})
		time.Sleep(cfg.Window)
	}
	wid := fmt.Sprintf("%s.%d.%d", cfg.Name, w.pid, w.seq.Add(1))
	w.emit(history.Event{Ev: history.EvWriteStart, Key: h.key, Token: h.token, Value: v + 1, WID: wid})
	wctx, cancel := context.WithTimeout(context.Background(), cfg.TTL)
	err = w.reg.Write(wctx, h.token, v+1, wid)
	cancel()
	out := history.OutOK
	switch {
	case errors.Is(err, register.ErrStale):
		out = history.OutStale
	case err != nil:
		out = history.OutUnknown
	}
	w.emit(history.Event{Ev: history.EvWrite, Key: h.key, Token: h.token, Value: v + 1, WID: wid, Outcome: out, Err: errString(err)})
}
