package wake

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

const (
	// LostWindow is how long after announcing itself a waiter looks again
	// at doubling intervals, against lost events.
	LostWindow = time.Second
	// announceHold is how long an announcement holds, at least: a waiter
	// announces again when less than a safety poll interval is left.
	announceHold = time.Hour
	// announceFor is how long, in safety poll intervals, an announcement
	// holds at least (with a long safety poll), and how long a process
	// keeps one for a claim that is not its own (if the claim turns out
	// to be ours, it was announced before we learnt that we made it:
	// owner.claimed keeps it on).
	announceFor = 8
	// maxRemote bounds each of the maps kept of what others told us and
	// of what we told them; past it, expired entries are dropped, and then
	// everything (a dropped one costs a waiter latency).
	maxRemote = 8192
)

// ClaimID names a claim that waiters wait for: its key and epoch.
type ClaimID struct {
	Key   string
	Epoch uint64
}

// Env is what the wake-ups need of their Client: its clocks, a look at a
// session, where to log, and how often to look again.
type Env struct {
	Mono         func() time.Duration   // local monotonic time
	Now          func() driver.Interval // the store's time
	SessionAlive func(ctx context.Context, id string) (alive bool, expires time.Time, err error)
	// Confirmed returns the highest expiry of one of our sessions that
	// the store confirmed (zero if unknown): what our Held hints carry
	// (held.go).
	Confirmed func(session string) time.Time
	Logger    *slog.Logger
	// Poll: a waiter's look while the stream is down; SafetyPoll: while
	// it is live.
	Poll, SafetyPoll time.Duration
	// TTL is the Client's lease: what a Held hint's expiry may put a
	// waiter's read of a session off by, at most (held.go).
	TTL time.Duration
	// Direct: the feed also carries events directly between processes
	// (ClientWithHints), whether or not the store's stream is live:
	// waiters announce themselves while it is down too.
	Direct bool
	// Peers: without direct hints, where the processes that take them are
	// recorded (nil if the store records none): mixed.go.
	Peers driver.PeerStore
	// Settle, if set, decides the feed, Direct and Peers, in the
	// background and off the path of any call (settle.go); ctx ends when
	// the Hub closes. Feed, Direct and Peers given here are then unused.
	Settle func(ctx context.Context) Settled
}

// Settled is how a Client follows its store's feed when that is decided
// later (Env.Settle): the feed, with direct hints or not, where the
// processes that take them are recorded (without them), and what to do
// once the feed is followed (nil: nothing).
type Settled struct {
	Feed     driver.Feed
	Direct   bool
	Peers    driver.PeerStore
	Followed func()
}

// shared is what every part reads: the Client's clocks and settings, this
// process's name in events, the feed, and the state of the store's
// stream. The feed, whether it carries direct hints and where the
// processes that take them are recorded are set once (cur): by New, or,
// with Env.Settle, once settled (settle.go); every part reads them
// through feed, direct and peers, under no lock.
type shared struct {
	env  Env
	cur  atomic.Pointer[Settled] // nil: not settled yet
	proc string                  // this Client's name in events

	healthy atomic.Bool // the stream is live
	off     atomic.Bool // it never will be: waiters poll
	// paused: the store's stream is paused because direct hints reach
	// this process (hint.ErrStoreFeedPaused): not a failure.
	paused atomic.Bool
}

// othersHold is how long a process keeps an announcement for a claim
// that is not its own.
func (s *shared) othersHold() time.Duration { return announceFor * s.env.SafetyPoll }

// holdFor is how long our announcements hold.
func (s *shared) holdFor() time.Duration { return max(announceHold, s.othersHold()) }

// Hub is a Client's wake-ups: it follows the store's feed (events.go),
// hands each event to the part that owns what it tells, and runs a
// waiter's wait (wait.go). Its lock guards its lifecycle only.
type Hub struct {
	*shared
	waiters  *registry
	claims   *claimWatch
	ours     *announcer
	owner    *owner
	held     *heldSender
	lingers  *lingers
	peerSeen *peerCheck

	mu       sync.Mutex
	started  bool
	closed   bool
	unfollow func() // stops following the feed
	noticed  bool   // the stream's first failure was logged
	settler         // settling in the background (settle.go)
}

// New returns the wake-ups of a Client whose name in events is proc, over
// feed (nil: waiters poll), or over what env.Settle settles.
func New(env Env, feed driver.Feed, proc string) *Hub {
	s := &shared{env: env, proc: proc}
	if env.Settle == nil {
		s.cur.Store(&Settled{Feed: feed, Direct: env.Direct, Peers: env.Peers})
	}
	h := &Hub{
		shared:   s,
		waiters:  newRegistry(s),
		claims:   newClaimWatch(),
		owner:    newOwner(s),
		lingers:  newLingers(),
		peerSeen: &peerCheck{shared: s},
		settler:  settler{kick: make(chan struct{}, 1)},
	}
	h.ours = newAnnouncer(s, h.trusted)
	h.held = newHeldSender(s, h.owner)
	return h
}

// Proc is this Client's name in events.
func (h *Hub) Proc() string { return h.proc }

// Start follows the store's feed, once; with Env.Settle, it starts
// settling it in the background instead (settle.go).
func (h *Hub) Start() {
	h.mu.Lock()
	s := h.cur.Load()
	start := !h.started && !h.closed && (s == nil || s.Feed != nil)
	h.started = h.started || start
	h.mu.Unlock()
	switch {
	case !start:
	case s == nil:
		h.settleLater()
	default:
		h.follow(*s)
	}
}

// follow follows s.Feed, not nil, and starts what direct hints need;
// not once the Client closes (StopSettling, Close).
func (h *Hub) follow(s Settled) {
	stop := s.Feed.Follow(h)
	h.mu.Lock()
	closed := h.closed || h.stopped
	if !closed {
		h.unfollow = stop
	}
	h.mu.Unlock()
	if closed {
		stop()
		return
	}
	if s.Direct {
		h.held.start() // not after stop: Close stops it
	}
	if s.Followed != nil {
		s.Followed()
	}
}

// Close stops following the feed (or settling it), and wakes every
// waiter to look again.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.StopSettling()
	h.mu.Lock()
	stop := h.unfollow
	h.unfollow = nil
	h.healthy.Store(false)
	h.mu.Unlock()
	h.waiters.wakeAll()
	h.held.stop()
	if stop != nil {
		stop()
	}
}

// isClosed reports whether Close was called.
func (h *Hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// Claimed records a claim of ours, made in session (whose expiry our
// Held hints for it carry): an announcement for it can only come after
// it exists. It also wakes whoever waits for the key's claims to appear
// (AwaitClaim).
func (h *Hub) Claimed(key string, epoch uint64, session string) {
	h.claims.seen(key, epoch)
	if h.feedless() {
		return
	}
	if h.owner.claimed(ClaimID{key, epoch}, session) {
		h.held.kick() // its waiter hears from us (held.go)
	}
}

// Ended wakes the waiters for key's epoch, a claim of ours that ended:
// those of this process directly, and others through an Ended event if
// one of them may wait for it (owner.ended), or if it was a waiter of
// ours that announced it waits and was withdrawn (announcer.withdrawn).
// Best effort: a waiter that misses it looks again later.
func (h *Hub) Ended(ctx context.Context, key string, epoch uint64) {
	k := ClaimID{key, epoch}
	h.waiters.ended(k)
	h.lingers.unwatch(k)
	h.settleSoon()
	if h.feedless() {
		return
	}
	waited := h.owner.ended(k)
	if h.ours.withdrawn(k) {
		waited = true
	}
	if waited && !h.off.Load() {
		h.sendEnded(ctx, k)
	}
}

// Holding records that k, a claim of ours, holds: its end will be a
// release, which tells nobody of a wait of its.
func (h *Hub) Holding(k ClaimID) { h.ours.holding(k) }

// NeedOne tells the owner of k that this process needs only k's end now,
// if it announced a need of more (announcer.needOne).
func (h *Hub) NeedOne(k ClaimID, own uint64) { h.ours.needOne(k, own) }

// sendEnded publishes an Ended event for k.
func (h *Hub) sendEnded(ctx context.Context, k ClaimID) {
	f := h.feed()
	if f == nil {
		return // not settled yet: the stream, once live, replays (owner.live)
	}
	e := driver.Event{Kind: driver.Ended, Key: k.Key, Epoch: k.Epoch, Proc: h.proc}
	if err := f.Publish(ctx, e); err != nil {
		h.env.Logger.Debug("dsync: announcing an end failed", slog.String("key", k.Key), slog.Any("err", err))
	}
}

// PeersOf returns the store's peer records for a Client that takes no
// hints (direct false), or nil: a Client with hints relies on Held
// hints instead, and a store without driver.Roles.Peers carries none.
func PeersOf(store driver.Store, direct bool) driver.PeerStore {
	if direct {
		return nil
	}
	return store.Roles().Peers
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}
