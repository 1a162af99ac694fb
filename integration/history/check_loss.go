package history

import "time"

// checkLosses checks the loss signal of every hold: a loss was signalled
// no later than its deadline plus the tolerance, and no hold was relied
// on past its deadline plus the tolerance without one. Neither counts the
// time the process was paused or stalled (ps): while stopped it could not
// signal anything. It also counts the losses and finds the latest.
func checkLosses(r *Report, opts *Options, ps pauses) {
	for key, hs := range r.Holds {
		for _, h := range hs {
			tol := opts.lossTolerance(h)
			if h.Lost {
				checkSignalledLoss(r, key, h, tol, ps)
			} else if h.Ended != 0 {
				checkSilentLoss(r, key, h, tol, ps)
			}
		}
	}
}

// checkSignalledLoss checks a hold whose loss was signalled: not later
// than tol after the deadline then in force, counting only the time the
// process was running.
func checkSignalledLoss(r *Report, key string, h *Hold, tol int64, ps pauses) {
	r.Losses++
	off := ps.stopped(h.PID, h.LostDeadline, h.LostAt)
	late := h.LostAt - h.LostDeadline - off
	if off > 0 {
		r.Excused++
	}
	if h.LostDeadline == 0 {
		r.add(KindPhantomHold, key, "%v: loss recorded without the deadline in force", h)
		return
	}
	if r.MaxLossHold == nil || late > int64(r.MaxLossLateness) {
		r.MaxLossLateness, r.MaxLossHold = time.Duration(late), h
	}
	if late > tol {
		r.add(KindLateLoss, key, "%v: loss signalled at %s, %v after its deadline %s (%v of it running; tolerance %v)",
			h, ts(h.LostAt), time.Duration(h.LostAt-h.LostDeadline), ts(h.LostDeadline), time.Duration(late), time.Duration(tol))
	}
}

// checkSilentLoss checks a hold that ended with no loss signal: it was not
// relied on later than tol after its deadline (the library's, if it
// recorded one), counting only the time the process was running.
func checkSilentLoss(r *Report, key string, h *Hold, tol int64, ps pauses) {
	dl := h.LibDeadline
	if dl == 0 {
		dl = h.Deadline
	}
	if h.Ended-ps.stopped(h.PID, dl, h.Ended) > dl+tol {
		r.add(KindSilentLoss, key, "%v: still relied on at %s, %v after its deadline %s, with no loss signal",
			h, ts(h.Ended), time.Duration(h.Ended-dl), ts(dl))
	}
}
