package dsyncmongo

import (
	"sync"
	"time"
)

// The other processes' waits a follower saw (awaitTime, feed_await.go):
// on FerretDB a getMore of the event cursor waits at most ferretAwait
// while another process waits. A waiter announces itself once per claim
// it waits for, and its announcement holds an hour (dsync's wake.go), but
// it waits only until that claim ends, or until it gives its own claim
// up (a LockContext that ended, a Partition member no longer assigned
// the shard it queued for): the end the stream shows of either ends the
// wait it counted, whoever published it, this process included (a
// waiter that withdraws after it announced publishes the end of its own
// claim; a holder's own release ends the waits for its claim). Counting
// every announcement for its hour kept the short getMores for an hour
// after any wait (issue 45: the members of a partition, after a member
// joined and took its shards over, sent a getMore every 5 s where 15 s
// would do, with no one waiting; and again after a member withdrew from
// a shard it queued for, whose holder went on; and, in a queue of two,
// each process while it waited, for the other's waits of its releases:
// issue 44). A wait whose end the stream never shows (a
// claim withdrawn with its session, an older dsync's withdrawal, an
// event lost) counts until its announcement lapses, as before.

// maxWaitsSeen bounds the waits remembered; past it, the latest of the
// dropped ones' lapses counts for all of them.
const maxWaitsSeen = 8192

// A waitOf names, within a key, the claim waited for and the waiter's own
// claim (0: not told), by their epochs.
type waitOf struct {
	epoch, own int64
}

// waitsSeen are the waits other processes announced, by key, and until
// when each announcement holds (store time). Safe for concurrent use.
type waitsSeen struct {
	mu    sync.Mutex
	waits map[string]map[waitOf]time.Time
	n     int // the waits in waits
	// dropped: until when the announcements forgotten past maxWaitsSeen
	// hold, at the latest.
	dropped time.Time
}

// waiting records an announcement: another process, whose own claim of
// key has the epoch own (0: not told), waits for the claim of key's
// epoch, until until.
func (w *waitsSeen) waiting(key string, epoch, own int64, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := waitOf{epoch, own}
	old, ok := w.waits[key][c]
	if ok && !until.After(old) {
		return
	}
	if !ok && w.n >= maxWaitsSeen {
		for _, ws := range w.waits {
			for _, u := range ws {
				if u.After(w.dropped) {
					w.dropped = u
				}
			}
		}
		clear(w.waits)
		w.n = 0
	}
	if w.waits == nil {
		w.waits = make(map[string]map[waitOf]time.Time)
	}
	if w.waits[key] == nil {
		w.waits[key] = make(map[waitOf]time.Time)
	}
	if _, ok := w.waits[key][c]; !ok {
		w.n++
	}
	w.waits[key][c] = until
}

// ended records that the claim of key's epoch ended (released, or
// withdrawn by its waiter): no one waits for it any longer, and its
// waiter waits for nothing.
func (w *waitsSeen) ended(key string, epoch int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.waits[key]
	for c := range ws {
		if c.epoch == epoch || c.own == epoch {
			delete(ws, c)
			w.n--
		}
	}
	if len(ws) == 0 {
		delete(w.waits, key)
	}
}

// any reports whether an announcement of a wait not seen to end holds
// at now (store time), forgetting those that lapsed.
func (w *waitsSeen) any(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := now.Before(w.dropped)
	for key, ws := range w.waits {
		for c, u := range ws {
			if !now.Before(u) {
				delete(ws, c)
				w.n--
				continue
			}
			held = true
		}
		if len(ws) == 0 {
			delete(w.waits, key)
		}
	}
	return held
}
