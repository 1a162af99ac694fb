package dsync

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/chain"
)

// Wake-ups. A waiter announces, through the store's feed, which claim it
// waits for; the owner of that claim, after ending it, publishes that it
// ended (only if someone announced, so that an uncontended Lock+Unlock
// stays at two commands), and the waiter wakes and confirms with one
// read. Waiters in the owner's own process are woken directly. Events
// are hints, never proof: queues live in the store. A missed event costs
// latency, at most the safety poll interval; while the feed is down, or
// where the store has none, waiters poll.
//
// Feeds lose events (FerretDB's cursor skips an event whose insert
// commits after a later one it has returned): for lostWindow after
// announcing itself a waiter looks again at doubling intervals, and the
// next in line looks whenever another event about its key passes.

const (
	// lostWindow is how long after announcing itself a waiter looks again
	// at doubling intervals, against lost events.
	lostWindow = time.Second
	// endMemory is how long a process remembers a claim it ended, to
	// answer an announcement that arrives after the end.
	endMemory = 10 * time.Second
	// announceFor is how long an announcement holds, in safety poll
	// intervals; a waiter announces again when less than one is left.
	announceFor = 8
	// maxRemote bounds the announcements kept; past it, expired ones are
	// dropped, and then everything (a dropped one costs a waiter latency).
	maxRemote = 8192
	// maxMine bounds the claims of ours remembered (past it, all are
	// forgotten, and their ends announced as if the stream had been down).
	maxMine = 1 << 16
)

// waitKey names a claim that waiters wait for.
type waitKey struct {
	key   string
	epoch uint64
}

// A topWait is the highest claim of a key that another process announced
// it waits for.
type topWait struct {
	epoch uint64
	until time.Time
}

// An announcement is one of our Waiting events: until when it holds (store
// time), and when it was sent (local monotonic).
type announcement struct {
	until time.Time
	sent  time.Duration
}

// A claimMark is what the feed's state was when a claim of ours was made.
type claimMark struct {
	gen uint64        // the stream's generation if live, else 0
	at  time.Duration // local monotonic
}

type wakeups struct {
	c    *Client
	feed driver.Feed // nil: waiters poll
	proc string      // this Client's name in events

	healthy atomic.Bool // the stream is live
	off     atomic.Bool // it never will be: waiters poll

	mu       sync.Mutex
	started  bool
	closed   bool
	unfollow func() // stops following the feed
	noticed  bool   // the stream's first failure was logged
	// local: this process's waiters, by the claim they wait for.
	local map[waitKey]map[chan struct{}]struct{}
	// remote: claims other processes announced they wait for, until when.
	remote    map[waitKey]time.Time
	remoteTop map[string]topWait
	announced map[waitKey]announcement
	// gen counts the times the stream turned live, the last time at
	// liveAt (local monotonic); mine holds, for each claim of ours not yet
	// ended, what the stream was when it was made.
	gen    uint64
	liveAt time.Duration
	mine   map[waitKey]claimMark
	// unsure: claims of ours that ended while the stream was not live,
	// with when they were made: once it is live, the ends of those made
	// too long before are announced (announcements may have passed by).
	unsure map[waitKey]time.Duration
	// next: for a key, the claim a local waiter waits for that was seen to
	// become the head of the queue: such a waiter is woken by any other
	// event about the key, in case the end of its claim was lost.
	next map[string]uint64
	// ends: claims this process ended lately (local monotonic time), so
	// that an announcement that comes after the end is answered.
	ends map[waitKey]time.Duration
	// claimWatch: waiters in awaitClaim (relock.go), by key, with the
	// epoch each waits to see claimed.
	claimWatch map[string]map[chan struct{}]uint64
}

func newWakeups(c *Client, proc string) *wakeups {
	return &wakeups{
		c: c, feed: c.feed, proc: proc,
		local:      make(map[waitKey]map[chan struct{}]struct{}),
		remote:     make(map[waitKey]time.Time),
		remoteTop:  make(map[string]topWait),
		announced:  make(map[waitKey]announcement),
		mine:       make(map[waitKey]claimMark),
		unsure:     make(map[waitKey]time.Duration),
		next:       make(map[string]uint64),
		ends:       make(map[waitKey]time.Duration),
		claimWatch: make(map[string]map[chan struct{}]uint64),
	}
}

// start follows the store's feed, once.
func (w *wakeups) start() {
	if w.feed == nil {
		return
	}
	w.mu.Lock()
	start := !w.started && !w.closed
	w.started = true
	w.mu.Unlock()
	if !start {
		return
	}
	stop := w.feed.Follow(w)
	w.mu.Lock()
	closed := w.closed
	w.unfollow = stop
	w.mu.Unlock()
	if closed {
		stop()
	}
}

// close stops following the feed, and wakes every waiter to look again.
func (w *wakeups) close() {
	w.mu.Lock()
	w.closed = true
	stop := w.unfollow
	w.healthy.Store(false)
	w.wakeAllLocked()
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Live implements driver.FeedHandler: the stream turned live. The ends of
// our claims made while it was not live, too long ago for the stream to
// replay the announcements made for them, are announced; every local
// waiter looks once more (and announces itself).
func (w *wakeups) Live(gen uint64) {
	w.mu.Lock()
	w.gen++
	w.liveAt = w.c.mono()
	var blind []waitKey
	for k, at := range w.unsure {
		if w.liveAt-at >= w.feed.Replay() {
			blind = append(blind, k)
		}
	}
	clear(w.unsure)
	w.mu.Unlock()
	for _, k := range blind {
		w.sendEnded(context.Background(), k)
	}
	w.healthy.Store(true)
	w.mu.Lock()
	w.wakeAllLocked()
	w.mu.Unlock()
}

// Down implements driver.FeedHandler: every local waiter falls back to
// polling at once, and our announcements are forgotten (they are made
// again once the stream is back).
func (w *wakeups) Down(err error, off bool) {
	w.healthy.Store(false)
	w.mu.Lock()
	clear(w.announced)
	w.wakeAllLocked()
	first := !w.noticed
	w.noticed = true
	w.mu.Unlock()
	switch {
	case off:
		w.off.Store(true)
		w.c.cfg.logger.Warn(fmt.Sprintf("dsync: wake-ups are off: %v; waiters poll", err))
	case first:
		w.c.cfg.logger.Warn("dsync: wake-up event stream unavailable; waiters poll", slog.Any("err", err))
	default:
		w.c.cfg.logger.Debug("dsync: wake-up event stream unavailable; waiters poll", slog.Any("err", err))
	}
}

// Event implements driver.FeedHandler: another process's event.
func (w *wakeups) Event(e driver.Event) {
	if e.Proc == w.proc || e.Key == "" || e.Epoch == 0 {
		return
	}
	k := waitKey{e.Key, e.Epoch}
	now := w.c.store.ServerTime().Earliest
	w.mu.Lock()
	if b, ok := w.next[e.Key]; ok && !(e.Kind == driver.Ended && b == k.epoch) {
		// Activity about the key of a waiter that is next in line: the
		// end it waits for may have been lost; it looks (one read).
		for c := range w.local[waitKey{e.Key, b}] {
			notify(c)
		}
	}
	switch e.Kind {
	case driver.Waiting:
		if !e.Until.After(now) {
			break
		}
		// A claim above k exists: whoever waits for the key's claims
		// there to appear (relock.go) looks again.
		w.claimSeenLocked(e.Key, k.epoch+1)
		if at, ok := w.ends[k]; ok && w.c.mono()-at < endMemory {
			// We ended that claim before the announcement reached us:
			// answer it now, or the waiter would learn of the end only at
			// its next look.
			w.mu.Unlock()
			w.sendEnded(context.Background(), k)
			return
		}
		if len(w.remote) >= maxRemote {
			w.expireLocked(now)
		}
		if e.Until.After(w.remote[k]) {
			w.remote[k] = e.Until
		}
		if top := w.remoteTop[e.Key]; k.epoch > top.epoch || k.epoch == top.epoch && e.Until.After(top.until) {
			if len(w.remoteTop) >= maxRemote {
				clear(w.remoteTop)
			}
			w.remoteTop[e.Key] = topWait{k.epoch, e.Until}
		}
	case driver.Ended:
		for c := range w.local[k] {
			notify(c)
		}
		if after := (waitKey{e.Key, k.epoch + 1}); len(w.local[after]) > 0 {
			// The claim after the one that ended heads the queue now (if
			// it was not withdrawn): who waits for it is next in line.
			if len(w.next) >= maxRemote {
				clear(w.next)
			}
			w.next[e.Key] = after.epoch
		}
	}
	w.mu.Unlock()
}

func (w *wakeups) expireLocked(now time.Time) {
	for k, until := range w.remote {
		if !until.After(now) {
			delete(w.remote, k)
		}
	}
	if len(w.remote) >= maxRemote {
		clear(w.remote)
	}
}

// wakeAllLocked wakes every waiter of this process, to look again. w.mu
// must be held.
func (w *wakeups) wakeAllLocked() {
	for _, waiters := range w.local {
		for c := range waiters {
			notify(c)
		}
	}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// wait blocks a waiter whose claim of key is behind blocker until
// blocker's end may have been recorded: an Ended event for it, the moment
// its session can have expired, or the poll interval (the safety poll
// interval while the stream is live). It returns nil to walk again, or
// ctx's cause.
func (w *wakeups) wait(ctx context.Context, key string, blocker chain.Blocker) error {
	k := waitKey{key, blocker.Epoch}
	c := make(chan struct{}, 1)
	w.mu.Lock()
	if w.local[k] == nil {
		w.local[k] = make(map[chan struct{}]struct{})
	}
	w.local[k][c] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.local[k], c)
		if len(w.local[k]) == 0 {
			delete(w.local, k)
		}
		w.mu.Unlock()
	}()

	cfg := w.c.cfg
	expires := blocker.ExpiresAt
	poll := cfg.poll
	if w.healthy.Load() {
		// The owner of the claim publishes its end if it has heard of us
		// by then, or when it hears of us if it ended the claim first. For
		// lostWindow after an announcement a waiter looks again at
		// doubling intervals (from the poll interval), covering ends that
		// come soon and were lost; after that only the safety poll.
		if age, err := w.announce(ctx, k); err == nil {
			poll = cfg.safetyPoll
			if age < lostWindow {
				poll = min(max(cfg.poll, age), poll)
			}
		}
	}
	// Whatever happens, the caller looks again within poll.
	lookAgain := w.c.mono() + poll
	for {
		// A millisecond more makes the wait end strictly after expires.
		wait := min(until(w.c.store, expires)+time.Millisecond, lookAgain-w.c.mono())
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(jitterUp(wait))
		select {
		case <-c:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		if !w.healthy.Load() || w.c.mono() >= lookAgain || !w.c.store.ServerTime().Earliest.After(expires) {
			return nil
		}
		// The blocker's session may have run out. With events flowing, its
		// end would have been announced: one read of the session tells
		// whether it was renewed meanwhile, and the wait goes on until the
		// new expiry or the time to look again.
		alive, renewed, err := w.c.eng.SessionAlive(ctx, blocker.Session)
		if err != nil || !alive || !renewed.After(expires) {
			return nil
		}
		expires = renewed
	}
}

// until is how long, at least, until the store's earliest possible time
// passes t (0 if it has).
func until(s driver.Store, t time.Time) time.Duration {
	return max(t.Sub(s.ServerTime().Earliest), 0)
}

// jitterUp spreads waiters that wake at once a little: a wait grows by up
// to 1% or 10 ms, whichever is less, and never shrinks, so a waiter never
// looks before the moment it waits for (such as a session's expiry), nor
// much after it: FIFO order means only one waiter acts on it anyway.
func jitterUp(d time.Duration) time.Duration {
	return max(d+rand.N(min(d/100, 10*time.Millisecond)+1), time.Millisecond)
}

// announce tells the other processes that this one waits for k, unless an
// announcement of ours still holds for more than a safety poll interval.
// It returns the age of the announcement in force.
func (w *wakeups) announce(ctx context.Context, k waitKey) (time.Duration, error) {
	now := w.c.store.ServerTime()
	safety := w.c.cfg.safetyPoll
	w.mu.Lock()
	a, ok := w.announced[k]
	w.mu.Unlock()
	if ok && a.until.Sub(now.Latest) > safety {
		return w.c.mono() - a.sent, nil
	}
	sent, again := w.c.mono(), ok && a.until.After(now.Earliest)
	if again {
		// Announcing again while the last announcement holds: the owner
		// has heard of us since then (or lost the event, as it may lose
		// this one), so the looks that follow a first announcement are
		// not needed again. Its age runs from the first.
		sent = a.sent
	}
	until := now.Earliest.Add(announceFor * safety)
	e := driver.Event{Kind: driver.Waiting, Key: k.key, Epoch: k.epoch, Until: until, Proc: w.proc}
	if err := w.feed.Publish(ctx, e); err != nil {
		w.c.cfg.logger.Debug("dsync: announcing a waiter failed", slog.Any("err", err))
		return 0, err
	}
	w.mu.Lock()
	if len(w.announced) >= maxRemote {
		clear(w.announced)
	}
	w.announced[k] = announcement{until: until, sent: sent}
	w.mu.Unlock()
	if again {
		return w.c.mono() - sent, nil
	}
	return 0, nil
}

// claimed records a claim of ours, and whether the stream is live as it
// is made: an announcement for it can only come after it exists. It also
// wakes whoever waits for the key's claims to appear (relock.go).
func (w *wakeups) claimed(key string, epoch uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claimSeenLocked(key, epoch)
	if w.feed == nil {
		return
	}
	k := waitKey{key, epoch}
	if len(w.mine) >= maxMine {
		clear(w.mine) // their ends are then announced as if blind
	}
	m := claimMark{at: w.c.mono()}
	if w.healthy.Load() {
		m.gen = w.gen
	}
	w.mine[k] = m
}

// seenAll reports whether the stream has shown every announcement made
// for a claim of ours: it was live since the claim was made, or it turned
// live soon enough after to replay them. w.mu must be held.
func (w *wakeups) seenAll(k waitKey) bool {
	m, ok := w.mine[k]
	switch {
	case !ok || !w.healthy.Load():
		return false
	case m.gen != 0:
		return m.gen == w.gen
	default:
		return w.liveAt-m.at < w.feed.Replay()
	}
}

// ended wakes the waiters for key's epoch: those of this process directly,
// and others through an Ended event if one of them may wait for it:
// another process announced it waits for it, or for a later claim of the
// key (its own announcement may have been lost on the way), or our stream
// was not live all along since the claim was made (announcements may have
// passed unseen). Best effort: a waiter that misses it looks again later.
func (w *wakeups) ended(ctx context.Context, key string, epoch uint64) {
	k := waitKey{key, epoch}
	now := w.c.store.ServerTime().Earliest
	w.mu.Lock()
	for c := range w.local[k] {
		notify(c)
	}
	if w.feed == nil {
		w.mu.Unlock()
		return
	}
	until, waited := w.remote[k]
	delete(w.remote, k)
	waited = waited && until.After(now)
	if top, ok := w.remoteTop[key]; ok && top.epoch > epoch && top.until.After(now) {
		waited = true
	}
	if m, ok := w.mine[k]; ok && !w.healthy.Load() && !w.off.Load() {
		// Too early to tell: the stream, once live, replays the
		// announcements kept (and answers them, see Event), and announces
		// this end if some may have passed by then.
		if len(w.unsure) >= maxRemote {
			clear(w.unsure)
		}
		w.unsure[k] = m.at
	} else if !w.seenAll(k) {
		waited = true
	}
	delete(w.mine, k)
	mono := w.c.mono()
	if len(w.ends) >= maxRemote {
		for k, at := range w.ends {
			if mono-at >= endMemory {
				delete(w.ends, k)
			}
		}
		if len(w.ends) >= maxRemote {
			clear(w.ends)
		}
	}
	w.ends[k] = mono
	w.mu.Unlock()
	if waited && !w.off.Load() {
		w.sendEnded(ctx, k)
	}
}

// sendEnded publishes an Ended event for k.
func (w *wakeups) sendEnded(ctx context.Context, k waitKey) {
	e := driver.Event{Kind: driver.Ended, Key: k.key, Epoch: k.epoch, Proc: w.proc}
	if err := w.feed.Publish(ctx, e); err != nil {
		w.c.cfg.logger.Debug("dsync: announcing an end failed", slog.String("key", k.key), slog.Any("err", err))
	}
}

// awaitClaim waits until an event shows that key's epoch may have been
// claimed (an announcement by a claim at or above it, or a claim of this
// process), or for d; it reports false if ctx ended first.
func (w *wakeups) awaitClaim(ctx context.Context, key string, epoch uint64, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	c := make(chan struct{}, 1)
	w.mu.Lock()
	if w.claimWatch[key] == nil {
		w.claimWatch[key] = make(map[chan struct{}]uint64)
	}
	w.claimWatch[key][c] = epoch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.claimWatch[key], c)
		if len(w.claimWatch[key]) == 0 {
			delete(w.claimWatch, key)
		}
		w.mu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// claimSeenLocked wakes those waiting in awaitClaim for a claim of key at
// or below epoch. w.mu must be held.
func (w *wakeups) claimSeenLocked(key string, epoch uint64) {
	for c, want := range w.claimWatch[key] {
		if want <= epoch {
			notify(c)
		}
	}
}
