package dsyncmongo

import (
	"sync"
	"time"
)

// The other processes' waits a follower saw (awaitTime, feed_await.go):
// on FerretDB a getMore of the event cursor waits at most ferretAwait
// while another process waits. A waiter announces itself once per claim
// it waits for, and its announcement holds an hour (dsync's wake.go), but
// it waits only until that claim ends: the end the stream shows ends the
// wait it counted. Counting every announcement for its hour kept the
// short getMores for an hour after any wait (issue 45: the members of a
// partition, after a member joined and took its shards over, sent a
// getMore every 5 s where 15 s would do, with no one waiting). A wait
// whose end the stream never shows (a claim withdrawn with its session,
// an event lost) counts until its announcement lapses, as before.

// maxWaitsSeen bounds the claims whose waits are remembered; past it, the
// latest of the dropped ones' ends counts for all of them.
const maxWaitsSeen = 8192

// A claimID names a claim by its key and epoch, as events do.
type claimID struct {
	key   string
	epoch int64
}

// waitsSeen are the claims other processes announced they wait for, and
// until when each announcement holds (store time). Safe for concurrent
// use.
type waitsSeen struct {
	mu    sync.Mutex
	until map[claimID]time.Time
	// dropped: until when the announcements forgotten past maxWaitsSeen
	// hold, at the latest.
	dropped time.Time
}

// waiting records an announcement: another process waits for the claim
// of key's epoch, until until.
func (w *waitsSeen) waiting(key string, epoch int64, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.until == nil {
		w.until = make(map[claimID]time.Time)
	}
	c := claimID{key, epoch}
	if old, ok := w.until[c]; ok && !until.After(old) {
		return
	}
	if _, ok := w.until[c]; !ok && len(w.until) >= maxWaitsSeen {
		for _, u := range w.until {
			if u.After(w.dropped) {
				w.dropped = u
			}
		}
		clear(w.until)
	}
	w.until[c] = until
}

// ended records that the claim of key's epoch ended: no one waits for it
// any longer.
func (w *waitsSeen) ended(key string, epoch int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.until, claimID{key, epoch})
}

// any reports whether an announcement of a claim not seen to end holds
// at now (store time), forgetting those that lapsed.
func (w *waitsSeen) any(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := now.Before(w.dropped)
	for c, u := range w.until {
		if !now.Before(u) {
			delete(w.until, c)
			continue
		}
		held = true
	}
	return held
}
