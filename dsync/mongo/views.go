package dsyncmongo

import (
	"sync"
	"time"
)

// A view is what one command taught this process about an epoch of a key.
// See timing.go for how views may be used.
type view struct {
	// epoch is the epoch described; 0 means the key has no epoch at all
	// (only in a newest view).
	epoch uint64
	// newest: the command established that epoch was the newest epoch of
	// the key when it ran (a newest-first read, our own insert, or our own
	// release of an epoch we provably still held). A point read of one
	// epoch does not.
	newest bool
	// known: owner, released, expired and expiresAt are filled in. After a
	// duplicate-key error we only know that the epoch exists.
	known     bool
	owner     string
	released  bool
	expired   bool      // provably expired when learned: expiresAt < Earliest then
	expiresAt time.Time // server time
	// nextAbsent: epoch+1 did not exist when learned (a read by _id), or
	// a "released" event naming this process said so (views.hintReleased).
	// It only spares a waiter an insert that is bound to fail, or the reads
	// before the insert; put does not cache it.
	nextAbsent bool
	// learned is the local monotonic time at which the command that taught
	// this view was sent.
	learned time.Duration
}

// free reports whether the view allows creating the next epoch: there is
// none, or it is released or provably expired. Expiry is judged as of the
// time the view was learned, never later: a holder's renewal that the
// view missed may have extended the epoch since (see Backend.Acquire).
func (v view) free() bool {
	return v.newest && v.known && (v.epoch == 0 || v.released || v.expired)
}

// provable reports whether the view shows epoch E >= 2 released, so that
// an insert of E+1 can be proven to create the newest epoch by reading E
// again afterwards (timing.go).
func (v view) provable() bool {
	return v.known && v.released && v.epoch >= 2
}

// trusted reports whether a free view is fresh enough to insert on at now.
func (v view) trusted(now, viewTrust time.Duration) bool {
	return v.free() && now-v.learned < viewTrust
}

// heldByOther reports whether the view may show another owner's hold, one
// that a point read of the epoch can confirm more cheaply than a
// newest-first read.
func (v view) heldByOther(owner string) bool {
	if v.epoch == 0 {
		return false
	}
	return !v.known || (!v.released && !v.expired && v.owner != owner)
}

// views caches the latest view of each key, so that a Mutex that unlocks
// and locks again at once inserts without reading first, and a waiter
// re-checks the epoch it waits on with a point read.
type views struct {
	mu sync.Mutex
	m  map[string]view
}

// maxViews bounds the cache; beyond it old entries are dropped.
const maxViews = 4096

func (c *views) get(key string) (view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// put records v unless the cache already holds a view of a later epoch,
// or of the same epoch learned later.
func (c *views) put(key string, v view) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok && (old.epoch > v.epoch || old.epoch == v.epoch && old.learned > v.learned) {
		return
	}
	if c.m == nil {
		c.m = make(map[string]view)
	}
	v.nextAbsent = false
	if _, ok := c.m[key]; !ok && len(c.m) >= maxViews {
		c.evict(v.learned)
	}
	c.m[key] = v
}

// evict drops views older than a minute (they are only ever used for a
// point read, which a newest-first read replaces), and if that is not
// enough, everything.
func (c *views) evict(now time.Duration) {
	for k, v := range c.m {
		if now-v.learned > time.Minute {
			delete(c.m, k)
		}
	}
	if len(c.m) >= maxViews {
		clear(c.m)
	}
}

// update applies f to the view of key if it describes epoch.
func (c *views) update(key string, epoch uint64, f func(*view)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok && v.epoch == epoch {
		f(&v)
		c.m[key] = v
	}
}

// released records that this process released epoch of key with a command
// sent at sent, when latest was the latest possible server time. If the
// cached view knew the epoch as the newest and its expiresAt was still
// ahead of latest, nobody could have judged it expired before the release
// was sent, so nobody could have created the next epoch: it was still the
// newest then, and the next Acquire may insert after it without reading.
// Otherwise the view is dropped.
func (c *views) released(key string, epoch uint64, latest time.Time, sent time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	switch {
	case !ok || v.epoch != epoch:
	case v.newest && v.known && latest.Before(v.expiresAt):
		v.released, v.learned = true, sent
		c.m[key] = v
	default:
		delete(c.m, key)
	}
}

// hintReleased records what a "released" event naming this process says:
// epoch of key was released, and (as far as the holder knew) is the
// newest. The view is neither newest nor trusted; it only lets the named
// waiter insert epoch+1 at once and prove the insert by reading epoch
// afterwards (timing.go), skipping the reads that would otherwise come
// first. A view of a later epoch is kept.
func (c *views) hintReleased(key string, epoch uint64, now time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok && old.epoch > epoch {
		return
	}
	if c.m == nil {
		c.m = make(map[string]view)
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxViews {
		c.evict(now)
	}
	c.m[key] = view{epoch: epoch, known: true, released: true, nextAbsent: true, learned: now}
}

// forget drops the view of key, after a write whose outcome is unknown.
func (c *views) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// A mark notes an epoch this process created and when the reply confirming
// it arrived (local monotonic time): once pruneDelay has passed since, the
// epochs below it may be deleted (timing.go, rule c).
type mark struct {
	epoch     uint64
	confirmed time.Duration
}

// marks holds the pending marks of each key, oldest first.
type marks struct {
	mu sync.Mutex
	m  map[string][]mark
}

const (
	maxMarksPerKey = 8
	maxMarkedKeys  = 4096
)

// note records m, unless key has maxMarksPerKey marks already (the oldest
// are kept: they ripen first).
func (c *marks) note(key string, m mark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]mark)
	}
	list, ok := c.m[key]
	if !ok && len(c.m) >= maxMarkedKeys {
		for k := range c.m { // drop an arbitrary key: pruning is best effort
			delete(c.m, k)
			break
		}
	}
	if len(list) < maxMarksPerKey {
		c.m[key] = append(list, m)
	}
}

// ripe removes and returns the newest mark of key that is at least delay
// old at now, with all older ones, if there is one.
func (c *marks) ripe(key string, now, delay time.Duration) (mark, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.m[key]
	i := -1
	for j, m := range list {
		if now-m.confirmed >= delay {
			i = j
		}
	}
	if i < 0 {
		return mark{}, false
	}
	due := list[i]
	if rest := list[i+1:]; len(rest) > 0 {
		c.m[key] = append([]mark(nil), rest...)
	} else {
		delete(c.m, key)
	}
	return due, true
}

// unsure remembers the epoch documents (by _id) that a renewal with an
// unknown outcome touched, so that their release can check it was not
// undone by that renewal landing late (Backend.confirmReleased).
type unsure struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// maxUnsure bounds the record; when it is full it starts again (a dropped
// entry costs at most a key blocked until its expiry, and only if its
// renewal lands at the very moment of its release).
const maxUnsure = 4096

func (u *unsure) note(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil || len(u.m) >= maxUnsure {
		u.m = make(map[string]struct{})
	}
	u.m[id] = struct{}{}
}

// take reports whether id was noted, and forgets it.
func (u *unsure) take(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.m[id]
	delete(u.m, id)
	return ok
}
