package integration

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
)

// pairs is the scene of the tests of faults that hit one holder
// (cutalone_test.go) or the whole store (storeoutage_test.go): keys, each
// with a holder process that keeps its hold until it loses it and a
// waiter process queued behind it. A holder that loses its hold unlocks
// and locks again, behind the waiter that took over: the pair swaps roles,
// and the key has a holder and a waiter again.
type pairs struct {
	c    *cluster
	keys []string
}

// pairConfig is the workers' config: Mutex holds kept until they are lost
// or the worker is told to stop, no register (startPairs gives each
// worker its keys).
func pairConfig(ttl time.Duration) worker.Config {
	return worker.Config{
		Mode:    worker.ModeMutex,
		TTL:     ttl,
		Poll:    dsync.DefaultPollInterval, // light on the server with 20 waiters and more
		HoldFor: time.Hour,
		Gap:     40 * time.Millisecond,
	}
}

// startPairs starts keys pairs on c, their holders in procs processes
// and their waiters in as many others: holder process hJ holds its share
// of the keys (each with a Mutex of its own, behind the process's one
// session), and waiter process wJ waits for the same ones. It starts
// them one process at a time, each holder once the last waiter queued
// and each waiter once its holder holds (forty processes opening their
// sessions at once at a 2 s TTL starve the embedded server on a small
// machine). The odd processes read the queues by runs (both walks meet
// the faults).
func startPairs(c *cluster, keys, procs int) *pairs {
	c.t.Helper()
	ps := &pairs{c: c}
	for j := range procs {
		first, n := j*keys/procs, (j+1)*keys/procs-j*keys/procs
		mine := make([]string, 0, n)
		for i := range n {
			mine = append(mine, worker.KeyOf("p", first+i))
		}
		ps.keys = append(ps.keys, mine...)
		start := func(role string) {
			c.start(fmt.Sprintf("%s%d", role, j+1), func(cfg *worker.Config) {
				cfg.Key, cfg.First, cfg.Keys = "p", first, n
				cfg.Runs = j%2 == 0
			})
		}
		start("h")
		for _, key := range mine {
			ps.held(key)
		}
		start("w")
		ps.queued(mine...)
	}
	return ps
}

// current returns the hold of key in force, as the events so far show it:
// its last acquire (of the largest token: the latest, when a hold lost
// to an outage was taken back with its token), if the hold has neither
// ended nor been lost.
func (ps *pairs) current(key string) (history.Event, bool) {
	var last history.Event
	ps.c.log.each(func(ev history.Event) {
		if ev.Ev == history.EvAcquire && ev.Key == key && (ev.Token > last.Token || ev.Token == last.Token && ev.T > last.T) {
			last = ev
		}
	})
	if last.Token == 0 || ps.ended(last) {
		return history.Event{}, false
	}
	return last, true
}

// ended reports whether the events so far end hold h, or signal its loss
// (after its acquire: a hold taken back after an outage has the token of
// the one lost).
func (ps *pairs) ended(h history.Event) bool {
	found := false
	ps.c.log.each(func(ev history.Event) {
		if ev.PID == h.PID && ev.Key == h.Key && ev.Token == h.Token && ev.T >= h.T && (ev.Ev == history.EvEnd || ev.Ev == history.EvLost) {
			found = true
		}
	})
	return found
}

// held waits for the hold of key in force; it fails the test if none
// comes within setupBound.
func (ps *pairs) held(key string) history.Event {
	ps.c.t.Helper()
	h, err := ps.awaitHeld(key)
	if err != nil {
		ps.c.t.Fatal(err)
	}
	return h
}

// awaitHeld waits up to setupBound for the hold of key in force.
func (ps *pairs) awaitHeld(key string) (history.Event, error) {
	deadline := time.Now().Add(setupBound)
	for {
		if h, ok := ps.current(key); ok {
			return h, nil
		}
		if _, _, ok := ps.c.log.await(ps.c.log.mark(), time.Until(deadline), func(ev history.Event) bool {
			return ev.Ev == history.EvAcquire && ev.Key == key
		}); !ok {
			return history.Event{}, fmt.Errorf("%s not held within %v", key, setupBound)
		}
	}
}

// queued waits until each of keys is held and a claim waits behind its
// holder's, and returns the holds; it fails the test if that takes
// longer than setupBound for a key.
func (ps *pairs) queued(keys ...string) map[string]history.Event {
	ps.c.t.Helper()
	holds, err := ps.awaitQueued(keys...)
	if err != nil {
		ps.c.t.Fatal(err)
	}
	return holds
}

// awaitQueued is queued, returning the error instead.
func (ps *pairs) awaitQueued(keys ...string) (map[string]history.Event, error) {
	holds := make(map[string]history.Event, len(keys))
	tokens := make(map[string]uint64, len(keys))
	for _, key := range keys {
		h, err := ps.awaitHeld(key)
		if err != nil {
			return nil, err
		}
		holds[key], tokens[key] = h, h.Token
	}
	return holds, awaitWaiters(ps.c.t, ps.c, tokens)
}

// deadline returns the latest deadline recorded so far of hold h: the send
// time of its last confirmed renewal plus TTL − TTL/20.
func (ps *pairs) deadline(h history.Event) int64 {
	dl := h.DL
	ps.c.log.each(func(ev history.Event) {
		if ev.PID == h.PID && ev.Key == h.Key && ev.Token == h.Token {
			dl = max(dl, ev.DL)
		}
	})
	return dl
}

// quantiles returns the p50, p99 and maximum of ds, which it sorts.
func quantiles(ds []time.Duration) (p50, p99, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	n := len(ds)
	return ds[n/2], ds[min(n-1, n*99/100)], ds[n-1]
}

// fmtQuantiles formats quantiles(ds) to the millisecond.
func fmtQuantiles(ds []time.Duration) string {
	p50, p99, top := quantiles(ds)
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return strings.Join([]string{"p50 " + r(p50), "p99 " + r(p99), "max " + r(top)}, ", ")
}
