package dsync

import "time"

// Lingering read claims (rwlinger.go) are watched here: an RWMutex that
// keeps its read claim after its last RUnlock must let it go as soon as
// a writer may wait behind it, and may keep it only while this process
// can hear so. What tells it is what tells an owner that a waiter waits
// (announce.go, wake_events.go): another process's Waiting event, by the
// store's stream or by direct hints, or a waiter of this process.
//
// A Waiting event for the claim itself says that a waiter waits for it;
// one for a later claim of its key, or from a waiter whose own claim
// comes after it, says so too: a read claim waits only for a writer, and
// a writer after the lingering claim waits for it, whichever claim it
// announced first. A stale one only ends a linger early.

// canHearLocked reports whether this process hears that another waits
// for a claim of its: direct hints carry Waiting events whether or not
// the store's stream is live; without them, only the live stream does.
// w.mu is held.
func (w *wakeups) canHearLocked() bool {
	return w.feed != nil && !w.closed && !w.off.Load() && (w.env.direct || w.healthy.Load())
}

// watchLinger starts watching k, a claim of ours that lingers: fire is
// called once (outside w.mu, in whatever goroutine heard it) when a
// waiter may wait behind it, or when this process can no longer hear
// that. It reports false, and watches nothing, if this process cannot
// hear waiters or a waiter behind k is known already.
func (w *wakeups) watchLinger(k waitKey, fire func()) bool {
	var now time.Time
	if w.feed != nil {
		now = w.env.now().Earliest
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.canHearLocked() || w.waiterKnownLocked(k, now) {
		return false
	}
	if w.lingers[k.key] == nil {
		w.lingers[k.key] = make(map[uint64]func())
	}
	w.lingers[k.key][k.epoch] = fire
	return true
}

// unwatchLinger stops watching k (its claim ended).
func (w *wakeups) unwatchLinger(k waitKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unwatchLingerLocked(k)
}

func (w *wakeups) unwatchLingerLocked(k waitKey) {
	if m := w.lingers[k.key]; m != nil {
		delete(m, k.epoch)
		if len(m) == 0 {
			delete(w.lingers, k.key)
		}
	}
}

// waiterKnownLocked reports whether a waiter may wait behind k, a claim
// of ours, as far as this process has heard: an announcement in force
// for k or a later claim of its key, or a waiter of this process for
// such a claim. w.mu is held.
func (w *wakeups) waiterKnownLocked(k waitKey, now time.Time) bool {
	if until, ok := w.remote[k]; ok && until.After(now) {
		return true
	}
	if top, ok := w.remoteTop[k.key]; ok && top.epoch > k.epoch && top.until.After(now) {
		return true
	}
	for lk, waiters := range w.local {
		if lk.key == k.key && lk.epoch >= k.epoch && len(waiters) > 0 {
			return true
		}
	}
	return false
}

// heardLocked takes the watches of key's lingering claims that a waiter
// for epoch, with its own claim own (0: unknown), may wait behind, and
// returns their fire functions, to be called once w.mu is released.
// w.mu is held.
func (w *wakeups) heardLocked(key string, epoch, own uint64) []func() {
	var fire []func()
	for e, f := range w.lingers[key] {
		if epoch >= e || own > e {
			fire = append(fire, f)
			w.unwatchLingerLocked(waitKey{key, e})
		}
	}
	return fire
}

// heardLocal is heardLocked for a waiter of this process.
func (w *wakeups) heardLocal(key string, epoch, own uint64) {
	w.mu.Lock()
	fire := w.heardLocked(key, epoch, own)
	w.mu.Unlock()
	runAll(fire)
}

// deafLocked takes every watch (this process can no longer hear
// waiters) and returns their fire functions. w.mu is held.
func (w *wakeups) deafLocked() []func() {
	var fire []func()
	for _, m := range w.lingers {
		for _, f := range m {
			fire = append(fire, f)
		}
	}
	clear(w.lingers)
	return fire
}

func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}
