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
// relied on later than tol after its deadline, counting only the time the
// process was running. The end is the worker's own CLOCK_MONOTONIC
// reading, taken as soon as it stopped relying on the hold and before any
// write or lock of its recorder (worker.hold.end), with the loss signal
// read at that same moment: "no loss signal" means none had fired then.
// The deadline is the library's, if the worker recorded it, else the
// worker's prediction, which is never earlier than the library's (the
// late-reply check holds it to that where both are recorded). Running
// time excludes the pauses the test injected and the stalls the process
// detected itself (EvStall: its monitor woke more than 10 ms late),
// nothing else: shorter scheduling delays, of which a loss signal's
// path from the deadline timer to the worker takes several, count as
// running, and the tolerance (the margin) has to cover them.
func checkSilentLoss(r *Report, key string, h *Hold, tol int64, ps pauses) {
	dl := h.LibDeadline
	if dl == 0 {
		dl = h.Deadline
	}
	if h.Ended <= dl {
		return
	}
	running := h.Ended - dl - ps.stopped(h.PID, dl, h.Ended)
	if running > tol {
		r.add(KindSilentLoss, key, "%v: still relied on at %s, %v after its deadline %s (%v of it running; tolerance %v), with no loss signal by then",
			h, ts(h.Ended), time.Duration(h.Ended-dl), ts(dl), time.Duration(running), time.Duration(tol))
	}
}
