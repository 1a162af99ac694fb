package dsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
)

// Wake-ups. A waiter announces, through the store's feed, which claim it
// waits for; the owner of that claim, after ending it, publishes that it
// ended (only if someone announced, so that an uncontended Lock+Unlock
// stays at two commands), and the waiter wakes and confirms its turn in
// the store (one run, or two reads by ID: TestWokenWaiterReads). Waiters
// in the owner's own process are woken directly. Events
// are hints, never proof: queues live in the store. A missed event costs
// latency, at most the safety poll interval; while the feed is down, or
// where the store has none, waiters poll. So do waiters without hints
// where processes that take hints are recorded, whose owners may not
// read the feed (wake_mixed.go).
//
// Feeds lose events (FerretDB's cursor skips an event whose insert
// commits after a later one it has returned, which its driver makes rare
// by sending a process's events one at a time, and ends and
// announcements again when another may have overtaken them): for
// lostWindow after announcing
// itself a waiter looks again at doubling intervals, and the next in
// line looks when another event about its key passes, at most once per
// nextLookEvery.
//
// Every follower receives every event, so nothing is published
// periodically: a waiter announces itself once for each claim it waits
// for (again only after its stream was down, or when the announcement
// is about to lapse, an hour on), and the owner of that claim keeps the
// announcement until the claim ends. An announcement repeated every
// interval would cost each of W waiters W events per interval, a term
// that grew with the square of the waiters (bench/RESULTS.md, Scale).

const (
	// lostWindow is how long after announcing itself a waiter looks again
	// at doubling intervals, against lost events.
	lostWindow = time.Second
	// nextLookEvery: a waiter next in line looks again on another event
	// about its key at most this often. The end of a claim that was
	// withdrawn, not released, makes the waiter behind the next claim
	// seem next in line too; in a storm of withdrawals (sessions that
	// expire under load), many waiters seemed so, and each looked at
	// every event about the key.
	nextLookEvery = time.Second
	// endMemory is how long a process remembers a claim it ended, to
	// answer an announcement that arrives after the end.
	endMemory = 10 * time.Second
	// announceHold is how long an announcement holds, at least: a waiter
	// announces again when less than a safety poll interval is left.
	announceHold = time.Hour
	// announceFor is how long, in safety poll intervals, an announcement
	// holds at least (with a long safety poll), and how long a process
	// keeps one for a claim that is not its own (if the claim turns out
	// to be ours, it was announced before we learnt that we made it:
	// claimed keeps it on).
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

// nextInLine is the claim that local waiters wait for that was seen to
// become the head of a key's queue, and when they last looked again on
// another event about the key (local monotonic).
type nextInLine struct {
	epoch  uint64
	looked time.Duration
}

// An announcement is one of our Waiting events: until when it holds (store
// time), and when it was sent (local monotonic).
type announcement struct {
	until time.Time
	sent  time.Duration
	last  time.Duration // when it was last sent (local monotonic)
	// direct: made while the store's stream was not live, so only direct
	// hints carried it: made again once the stream is live.
	direct bool
	// need: the need it told (driver.Event.Need), or told again since.
	need uint64
}

// A claimMark is what the feed's state was when a claim of ours was made,
// and the session it was made in.
type claimMark struct {
	gen     uint64        // the stream's generation if live, else 0
	at      time.Duration // local monotonic
	session string
}

// wakeEnv is what the wake-ups need of their Client: its clocks, a look
// at a session, where to log, and how often to look again.
type wakeEnv struct {
	mono         func() time.Duration   // local monotonic time
	now          func() driver.Interval // the store's time
	sessionAlive func(ctx context.Context, id string) (alive bool, expires time.Time, err error)
	// confirmed returns the highest expiry of one of our sessions that
	// the store confirmed (zero if unknown): what our Held hints carry
	// (wake_held.go).
	confirmed func(session string) time.Time
	logger    *slog.Logger
	// poll: a waiter's look while the stream is down; safetyPoll: while
	// it is live.
	poll, safetyPoll time.Duration
	// ttl is the Client's lease: what a Held hint's expiry may put a
	// waiter's read of a session off by, at most (wake_held.go).
	ttl time.Duration
	// direct: the feed also carries events directly between processes
	// (ClientWithHints), whether or not the store's stream is live:
	// waiters announce themselves while it is down too.
	direct bool
	// peers: without direct hints, where the processes that take them are
	// recorded (nil if the store records none): wake_mixed.go.
	peers driver.PeerStore
}

// wakeups are a Client's wake-ups: the handler of its store's feed
// (wake.go), the registry of its waiters (wait.go) and the announcer of
// what they wait for and what ended (announce.go).
type wakeups struct {
	env  wakeEnv
	feed driver.Feed // nil: waiters poll
	proc string      // this Client's name in events

	healthy atomic.Bool // the stream is live
	off     atomic.Bool // it never will be: waiters poll
	// paused: the store's stream is paused because direct hints reach
	// this process (hint.ErrStoreFeedPaused): not a failure.
	paused atomic.Bool

	mu sync.Mutex
	// settle, if set, decides the feed, env.direct and env.peers as the
	// feed is first followed (start), and is then cleared.
	settle   func() settled
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
	// announcedBy: for a claim of ours that waits and announced it, the
	// claim it announced it waits for, until it holds or ends.
	announcedBy map[waitKey]waitKey
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
	// become the head of the queue: such a waiter is woken by another
	// event about the key, in case the end of its claim was lost.
	next map[string]nextInLine
	// ends: claims this process ended lately (local monotonic time), so
	// that an announcement that comes after the end is answered.
	ends map[waitKey]time.Duration
	// endSeq counts the ends of claims this process made or heard of;
	// endsAt keeps, for the latest of them, the count at each: a waiter
	// hears of the ends made since its walk began, even those made
	// before it registered (mark, enterLocal).
	endSeq uint64
	endsAt map[waitKey]uint64
	// claimWatch: waiters in awaitClaim (relock.go), by key, with the
	// epoch each waits to see claimed.
	claimWatch map[string]map[chan struct{}]uint64
	// held: for claims local waiters wait for, the Held hints about each
	// (wake_held.go).
	held map[waitKey]heldNews
	// beatKick wakes the loop that sends our Held hints; beatStop stops
	// it, beatDone is closed when it returned.
	beatKick, beatStop, beatDone chan struct{}
	// peerCheck: whether processes that take hints are recorded, as last
	// read (wake_mixed.go).
	peerCheck peerCheck
	// lingers: our lingering read claims, by key and epoch, each with
	// what to call once a waiter may wait behind it (wake_linger.go).
	lingers map[string]map[uint64]func()
}

func newWakeups(env wakeEnv, feed driver.Feed, proc string) *wakeups {
	return &wakeups{
		env: env, feed: feed, proc: proc,
		local:       make(map[waitKey]map[chan struct{}]struct{}),
		remote:      make(map[waitKey]time.Time),
		remoteTop:   make(map[string]topWait),
		announced:   make(map[waitKey]announcement),
		announcedBy: make(map[waitKey]waitKey),
		mine:        make(map[waitKey]claimMark),
		unsure:      make(map[waitKey]time.Duration),
		next:        make(map[string]nextInLine),
		ends:        make(map[waitKey]time.Duration),
		endsAt:      make(map[waitKey]uint64),
		claimWatch:  make(map[string]map[chan struct{}]uint64),
		held:        make(map[waitKey]heldNews),
		lingers:     make(map[string]map[uint64]func()),
		beatKick:    make(chan struct{}, 1),
		beatStop:    make(chan struct{}),
	}
}

// start follows the store's feed, once. A Client whose direct hints
// wait for the store to say how it is reached (hints.go) settles them
// first.
func (w *wakeups) start() {
	w.mu.Lock()
	var followed func()
	if w.settle != nil && !w.closed {
		s := w.settle()
		w.feed, w.env.direct, w.env.peers, followed = s.feed, s.direct, s.peers, s.followed
		w.settle = nil
	}
	start := w.feed != nil && !w.started && !w.closed
	w.started = w.started || start
	w.mu.Unlock()
	if !start {
		return
	}
	stop := w.feed.Follow(w)
	w.mu.Lock()
	closed := w.closed
	w.unfollow = stop
	if !closed && w.env.direct {
		w.beatDone = make(chan struct{})
		go w.beatLoop()
	}
	w.mu.Unlock()
	if closed {
		stop()
		return
	}
	if followed != nil {
		followed()
	}
}

// close stops following the feed, and wakes every waiter to look again.
func (w *wakeups) close() {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	stop := w.unfollow
	beating := w.beatDone
	w.healthy.Store(false)
	w.wakeAllLocked()
	w.mu.Unlock()
	if !already {
		close(w.beatStop)
	}
	if beating != nil {
		<-beating
	}
	if stop != nil {
		stop()
	}
}

// Live implements driver.FeedHandler: the stream turned live. The ends of
// our claims made while it was not live, too long ago for the stream to
// replay the announcements made for them, are announced; every local
// waiter looks once more (and announces itself again if the stream went
// down: a stream reopened at once, with no Down, keeps our announcements,
// which were published whatever our stream did; the ends of claims made
// before it are published as if announcements for them had passed unseen,
// see seenAll).
func (w *wakeups) Live(gen uint64) {
	w.mu.Lock()
	w.gen++
	w.liveAt = w.env.mono()
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
	w.paused.Store(false)
	w.healthy.Store(true)
	w.mu.Lock()
	w.wakeAllLocked()
	w.mu.Unlock()
}

// Down implements driver.FeedHandler: every local waiter falls back to
// polling at once, and our announcements are forgotten (they are made
// again once the stream is back).
//
// Paused (hint.ErrStoreFeedPaused: direct hints reach this process, so
// it does not read the store's stream) is no failure: waiters whose
// claim's owner sends Held hints rely on them (wake_held.go), the others
// poll, and ends are published to the processes that announced they
// wait, through hints.
func (w *wakeups) Down(err error, off bool) {
	paused := errors.Is(err, hint.ErrStoreFeedPaused)
	w.paused.Store(paused)
	w.healthy.Store(false)
	w.mu.Lock()
	clear(w.announced)
	w.wakeAllLocked()
	first := !w.noticed && !paused
	w.noticed = w.noticed || !paused
	var deaf []func()
	if off || !w.env.direct {
		// No Waiting event reaches us any more: lingering claims end.
		deaf = w.deafLocked()
	}
	w.mu.Unlock()
	runAll(deaf)
	switch {
	case paused:
		w.env.logger.Debug("dsync: " + err.Error())
	case off:
		w.off.Store(true)
		w.env.logger.Warn(fmt.Sprintf("dsync: wake-ups are off: %v; waiters poll", err))
	case first:
		w.env.logger.Warn("dsync: wake-up event stream unavailable; waiters poll", slog.Any("err", err))
	default:
		w.env.logger.Debug("dsync: wake-up event stream unavailable; waiters poll", slog.Any("err", err))
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

// othersHold is how long a process keeps an announcement for a claim
// that is not its own.
func (w *wakeups) othersHold() time.Duration { return announceFor * w.env.safetyPoll }

// holdFor is how long our announcements hold.
func (w *wakeups) holdFor() time.Duration { return max(announceHold, w.othersHold()) }

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
