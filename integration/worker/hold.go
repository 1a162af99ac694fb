package worker

import (
	"sync"

	"github.com/go-dsync/dsync/integration/history"
)

// hold tracks one hold while the worker is in it.
type hold struct {
	w     *worker
	key   string
	token uint64
	lost  <-chan struct{}
	// lostNow, if set, tells at once whether the loss signal has fired
	// (a term's: its context's cause). The goroutine that closes lost
	// for a term runs only once scheduled after the cancel, and an end
	// recorded before it would say "not lost" of a loss already
	// signalled (the checker then calls a late loss a silent one).
	lostNow func() bool

	mu       sync.Mutex
	ended    bool
	lostSeen bool
	wg       sync.WaitGroup
}

// watch records the loss signal when lost closes, unless the hold has
// ended first. It returns a function that stops watching.
func (h *hold) watch(lost <-chan struct{}, deadline func() int64, src string) (stop func()) {
	h.lost = lost
	done := make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-lost:
			t := history.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			if !h.ended && !h.lostSeen {
				h.lostSeen = true
				h.w.emit(history.Event{Ev: history.EvLost, Key: h.key, Token: h.token, T: t, DL: deadline(), Src: src})
			}
		case <-done:
		}
	}()
	return func() { close(done); h.wg.Wait() }
}

func (h *hold) isLost() bool {
	if h.lostNow != nil && h.lostNow() {
		return true
	}
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// end records that the worker stops relying on the hold now. The time,
// and whether the loss signal had fired by then, are read first:
// deadline (the deadline in force) may wait for the recorder's lock,
// which a goroutine writing the history holds, and a write can block
// for long on a loaded host (a full pipe, the disk) while the process
// runs; timed after it, the end would count that wait as reliance.
func (h *hold) end(deadline func() int64, src string) {
	t := history.Now()
	lost := h.isLost()
	dl := deadline()
	h.mu.Lock()
	defer h.mu.Unlock()
	if lost && !h.lostSeen {
		// The watcher has not run yet: this is when the loss was seen.
		h.lostSeen = true
		h.w.emit(history.Event{Ev: history.EvLost, Key: h.key, Token: h.token, T: t, DL: dl, Src: src})
	}
	h.ended = true
	h.w.emit(history.Event{Ev: history.EvEnd, Key: h.key, Token: h.token, T: t, DL: dl, Src: src, Lost: lost})
}
