package dsync

// How a primitive reports what it handles itself: to its logger, and to
// its error handler (WithErrorHandler).

func (p *core) report(err error) {
	p.cfg.logger.Warn("dsync", "key", p.key, "err", err)
	if p.cfg.onError != nil {
		p.cfg.onError(err)
	}
}

// reportLoss reports a hold's loss: to the error handler, as report does,
// but logged at Info, not Warn. The caller learns of it anyway (Lost,
// ErrLost from Unlock), and the failures that caused it (renewals) were
// logged at Warn as they happened.
func (p *core) reportLoss(err error) {
	p.cfg.logger.Info("dsync: hold lost", "key", p.key, "err", err)
	if p.cfg.onError != nil {
		p.cfg.onError(err)
	}
}
