package hint

import (
	"context"
	"errors"
	"time"
)

// Hints first. A process that hints reach does not read the store's
// feed: on FerretDB every follower's tailable cursor has the server
// re-run its query every 10 ms, which slows every command of every
// process; on any server, a follower costs a command every few seconds.
//
// How a process knows hints reach it: it took an authenticated hint from
// another process within reachedFor. Every process says hello to every
// process recorded after each refresh of its record (every refreshEvery),
// and a hello is answered, so that a process whose hints get through
// hears from the others at least that often, waiting or not; a Held
// (sent by the owner of a claim to the processes that announced they
// wait for it, at once and then twice per poll interval) or any other
// hint counts too. A process whose hints stop arriving (a firewall put
// up, the others gone) reads the store's feed again once reachedFor has
// passed since the last one: up to reachedFor + reachCheck.
//
// Meanwhile nothing waits longer than it would without hints: a waiter
// sleeps past its poll interval only while the owner of the claim it
// waits for sends it a Held every half poll interval
// (dsync/internal/wake's wait.go): a Held lost, or an end lost, costs it at most the poll
// interval. What pausing gives up is the store's path between this
// process and processes that do not take hints (see docs/operations.md,
// "Direct hints"): an owner that does not read the store's feed never
// sees their announcements, so they learn of their turn at their own
// looks (every poll interval, while processes that take hints are
// recorded: dsync/internal/wake's mixed.go).
//
// While paused, this Feed's handler is told the store's feed is down
// (ErrStoreFeedPaused), and it publishes through hints only. A store
// whose feed pauses (driver.Roles.FeedPause) stops reading meanwhile;
// another's events are dropped.

const (
	// reachedFor is how long after the last hint it took from another
	// process this process counts as reached by hints: the others'
	// hellos come every refreshEvery.
	reachedFor = 2*refreshEvery + refreshEvery/2
	// reachCheck is how often a paused process checks whether it still
	// is reached.
	reachCheck = reachedFor / 5
)

// ErrStoreFeedPaused is the error of a Down that tells the store's feed is
// paused. A Feed tells its handler so when it stopped reading the store's
// feed because hints reach this process. It is not a failure.
var ErrStoreFeedPaused = errors.New("hint: the store's feed is paused while direct hints reach this process")

// mono is this Feed's monotonic clock.
func (f *Feed) mono() time.Duration { return time.Since(f.origin) }

// heard notes that a hint from another process was taken: the store's
// feed is paused, if it was not.
func (f *Feed) heard() {
	f.lastHeard.Store(int64(f.mono()) + 1)
	if f.inner != nil && !f.paused.Load() {
		f.setPaused(true)
	}
}

// reached reports whether a hint from another process was taken within
// reachedFor.
func (f *Feed) reached() bool {
	at := f.lastHeard.Load()
	return at != 0 && f.mono()-time.Duration(at-1) < f.reachedFor
}

// Paused reports whether the store's feed is paused (for status pages
// and tests).
func (f *Feed) Paused() bool { return f.paused.Load() }

// watchReach resumes the store's feed once hints no longer reach this
// process, until ctx ends.
func (f *Feed) watchReach(ctx context.Context) {
	if f.inner == nil {
		return
	}
	t := time.NewTicker(f.reachCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if f.paused.Load() && !f.reached() {
			f.setPaused(false)
		}
	}
}

// setPaused pauses or resumes the store's feed, telling the handler.
func (f *Feed) setPaused(p bool) {
	f.pmu.Lock()
	defer f.pmu.Unlock()
	if f.paused.Load() == p {
		return
	}
	pauser := f.pauser
	f.hmu.Lock()
	f.paused.Store(p)
	switch {
	case p:
		f.innerLive.Store(false)
		if pauser != nil {
			f.innerUp.Store(false) // it says Live again once resumed
		}
		f.h.Down(ErrStoreFeedPaused, false)
	case pauser == nil && f.innerUp.Load():
		// Its events were dropped meanwhile: live again from now on.
		f.innerLive.Store(true)
		f.h.Live(0)
	}
	f.hmu.Unlock()
	if pauser != nil {
		pauser.Pause(p)
	}
	if p {
		f.cfg.Logger.Debug("dsync: direct hints reach this process: the store's feed is paused")
	} else {
		f.cfg.Logger.Debug("dsync: no direct hint lately: the store's feed is followed again")
	}
}
