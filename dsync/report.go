package dsync

import (
	"context"
	"errors"
	"log/slog"
)

// How a primitive reports what it handles itself: to its logger, and to
// its error handler (ClientWithErrorHandler).

func (p *core) report(err error) {
	p.cfg.logger.Warn("dsync", "key", p.key, "err", err)
	if p.cfg.onError != nil {
		p.cfg.onError(err)
	}
}

// reportLoss reports a hold's loss, err naming its cause: to the error
// handler, as report does, and logged at Warn, since a hold lost without
// Unlock is a fault the operator should see even where the program does
// not watch Lost. A hold lost to Close is logged at Info: the program
// ended it.
func (p *core) reportLoss(err error) {
	level := slog.LevelWarn
	if errors.Is(err, ErrClosed) {
		level = slog.LevelInfo
	}
	p.cfg.logger.Log(context.Background(), level, "dsync: hold lost", "key", p.key, "err", err)
	if p.cfg.onError != nil {
		p.cfg.onError(err)
	}
}
