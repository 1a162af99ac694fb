package wake

import (
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The registry of this process's waiters: each registers for the end of
// the claim it waits for, and is notified when that claim ends here or
// an event says so; also when the end came after its mark (taken before
// the walk that told it what to wait for) but before it registered. It
// keeps what other events tell a waiter: whether it is next in line, and
// the Held hints about its claim (held.go).

// nextLookEvery: a waiter next in line looks again on another event about
// its key at most this often. The end of a claim that was withdrawn, not
// released, makes the waiter behind the next claim seem next in line
// too; in a storm of withdrawals (sessions that expire under load), many
// waiters seemed so, and each looked at every event about the key.
const nextLookEvery = time.Second

// nextInLine is the claim that local waiters wait for that was seen to
// become the head of a key's queue, and when they last looked again on
// another event about the key (local monotonic).
type nextInLine struct {
	epoch  uint64
	looked time.Duration
}

// heldNews is what the Held hints about a claim told: when the last came
// (local monotonic), and the latest expiry of the claim's session that
// they carried (store time; zero if none did).
type heldNews struct {
	at      time.Duration
	expires time.Time
}

// registry is this process's waiters. Its lock guards its maps and the
// count of ends; no other lock is taken under it.
type registry struct {
	*shared

	mu sync.Mutex
	// local: this process's waiters, by the claim they wait for.
	local map[ClaimID]map[chan struct{}]struct{}
	// endSeq counts the ends of claims this process made or heard of;
	// endsAt keeps, for the latest of them, the count at each: a waiter
	// hears of the ends made since its walk began, even those made
	// before it registered (mark, enter).
	endSeq uint64
	endsAt map[ClaimID]uint64
	// next: for a key, the claim a local waiter waits for that was seen to
	// become the head of the queue: such a waiter is woken by another
	// event about the key, in case the end of its claim was lost.
	next map[string]nextInLine
	// held: for claims local waiters wait for, the Held hints about each;
	// an entry lives as long as a local waiter for its claim.
	held map[ClaimID]heldNews
}

func newRegistry(s *shared) *registry {
	return &registry{
		shared: s,
		local:  make(map[ClaimID]map[chan struct{}]struct{}),
		endsAt: make(map[ClaimID]uint64),
		next:   make(map[string]nextInLine),
		held:   make(map[ClaimID]heldNews),
	}
}

// mark returns the count of the ends of claims made or heard of so far.
// A waiter takes it before the walk that finds what it waits for, and
// gives it to enter: it can register only once the walk has told it what
// it waits for, and an end between the walk's read and the registration
// would otherwise reach nobody (the waiter would look again only at its
// poll interval).
func (r *registry) mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.endSeq
}

// enter registers a waiter of this process for k's end: its channel is
// notified when k ends here or an event says so, and at once if that
// happened after the mark since; leave unregisters it.
func (r *registry) enter(k ClaimID, since uint64) (c chan struct{}, leave func()) {
	c = make(chan struct{}, 1)
	r.mu.Lock()
	if r.local[k] == nil {
		r.local[k] = make(map[chan struct{}]struct{})
	}
	r.local[k][c] = struct{}{}
	if r.endsAt[k] > since {
		notify(c)
	}
	r.mu.Unlock()
	return c, func() {
		r.mu.Lock()
		delete(r.local[k], c)
		if len(r.local[k]) == 0 {
			delete(r.local, k)
			delete(r.held, k)
		}
		r.mu.Unlock()
	}
}

// ended wakes this process's waiters for k, a claim of ours that ended,
// and counts the end for those that register after it.
func (r *registry) ended(k ClaimID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endedLocked(k)
}

// heardEnd is ended for k, which another process ended; the waiters of
// the claim after it are next in line (if k was not withdrawn).
func (r *registry) heardEnd(k ClaimID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endedLocked(k)
	if after := (ClaimID{k.Key, k.Epoch + 1}); len(r.local[after]) > 0 {
		if len(r.next) >= maxRemote {
			clear(r.next)
		}
		r.next[k.Key] = nextInLine{after.Epoch, r.env.Mono() - nextLookEvery}
	}
}

// endedLocked notifies k's waiters and counts its end. Only the latest
// ends are kept (maxRemote/2 at least): a waiter registers one walk after
// its mark, and far fewer ends come in a walk. r.mu is held.
func (r *registry) endedLocked(k ClaimID) {
	for c := range r.local[k] {
		notify(c)
	}
	r.endSeq++
	if len(r.endsAt) >= maxRemote {
		for e, at := range r.endsAt {
			if at+maxRemote/2 <= r.endSeq {
				delete(r.endsAt, e)
			}
		}
	}
	r.endsAt[k] = r.endSeq
}

// wakeAll wakes every waiter of this process, to look again.
func (r *registry) wakeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, waiters := range r.local {
		for c := range waiters {
			notify(c)
		}
	}
}

// nudge: activity about the key of a waiter that is next in line may mean
// the end it waits for was lost; the waiter looks (one read), at most
// once per nextLookEvery. Not on that end itself, which wakes it anyway,
// nor on a Held hint for the claim it waits for: its owner says the
// claim has not ended (TestHeldSparesTheWaiterNextInLine).
func (r *registry) nudge(e driver.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.next[e.Key]
	if !ok || n.epoch == e.Epoch && (e.Kind == driver.Ended || e.Kind == driver.Held) {
		return
	}
	if mono := r.env.Mono(); mono-n.looked >= nextLookEvery {
		r.next[e.Key] = nextInLine{n.epoch, mono}
		for c := range r.local[ClaimID{e.Key, n.epoch}] {
			notify(c)
		}
	}
}

// waiting reports whether a waiter of this process waits for k or a later
// claim of its key: a lingering read claim k must let go (linger.go).
func (r *registry) waiting(k ClaimID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for lk, waiters := range r.local {
		if lk.Key == k.Key && lk.Epoch >= k.Epoch && len(waiters) > 0 {
			return true
		}
	}
	return false
}

// heardHeld takes in a Held hint for k that says k's session lasts at
// least until lasts (zero: it does not say), if local waiters wait for
// k; no later than a TTL from now.
func (r *registry) heardHeld(k ClaimID, lasts time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.local[k]) > 0 {
		h := r.held[k]
		h.at = r.env.Mono()
		if limit := r.env.Now().Latest.Add(r.env.TTL); lasts.After(limit) {
			lasts = limit
		}
		if lasts.After(h.expires) {
			h.expires = lasts
		}
		r.held[k] = h
	}
}

// heldAt returns when the last Held hint about k came (local monotonic),
// if one came while a waiter of this process waited for k.
func (r *registry) heldAt(k ClaimID) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.held[k]
	return h.at, ok
}

// lasts returns the later of expires, an expiry of k's session as read,
// and the latest that Held hints about k carried: its stored expiry is
// at least that.
func (r *registry) lasts(k ClaimID, expires time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.held[k].expires; h.After(expires) {
		return h
	}
	return expires
}
