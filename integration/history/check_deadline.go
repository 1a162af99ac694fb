package history

import "time"

// checkDeadlines checks what the recorded deadlines of the holds of key
// say: every hold recorded one; the library's deadline never exceeded
// the one predicted from replies that arrived in time (a late reply was
// not counted); and an Unlock called after the deadline reported
// ErrLost.
func checkDeadlines(r *Report, key string, hs []*Hold, opts *Options) {
	for _, h := range hs {
		if h.Deadline == 0 {
			r.add(KindPhantomHold, key, "%v: acquired with no deadline recorded", h)
		}
		if h.Unlocked != 0 && h.UnlockDL != 0 && h.Unlocked > h.UnlockDL && !h.UnlockLost {
			r.add(KindLateUnlock, key, "%v: Unlock called at %s, %v after the deadline %s, reported success instead of ErrLost",
				h, ts(h.Unlocked), time.Duration(h.Unlocked-h.UnlockDL), ts(h.UnlockDL))
		}
		if h.LibDeadline != 0 && h.PredDeadline != 0 && h.LibDeadline > h.PredDeadline+opts.predTolerance() {
			r.add(KindLateReply, key, "%v: the library's deadline %s is %v past the latest deadline replies in time allow (%s)",
				h, ts(h.LibDeadline), time.Duration(h.LibDeadline-h.PredDeadline), ts(h.PredDeadline))
		}
	}
}
