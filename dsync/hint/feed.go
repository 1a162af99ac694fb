package hint

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// How a process keeps its record in the store: it records itself for
// recordFor, again every refreshEvery, and reads the others' records and
// the hint key then too; while hints reach it, it records itself every
// putEvery and reads every fullEvery (record.go).
const (
	recordFor    = 2 * time.Minute
	refreshEvery = 30 * time.Second
	putEvery     = time.Minute
	fullEvery    = 4 * time.Minute
	retryFirst   = time.Second
)

// A Feed is a driver.Feed that also delivers hints sent directly by other
// processes. It delivers them besides the events of the store's own feed
// (if any).
type Feed struct {
	store driver.Store
	peers driver.PeerStore
	inner driver.Feed // nil: the store carries no events, or they are off
	// pauser pauses inner (the store's Roles.FeedPause); nil: inner's
	// events are dropped while paused.
	pauser driver.FeedPauser
	cfg    Config
	id     string // this process's peer ID

	following atomic.Bool
	counts    counters // what Stats reports
	// ready is closed once this process listens, has read the hint key
	// and the others' records, and has said hello; or when it cannot
	// listen.
	ready     chan struct{}
	readyOnce sync.Once
	gaveUp    atomic.Bool // a wait for ready ran out (awaitReady)
	// onAwait, if set, is called as a Publish starts waiting for ready
	// (tests).
	onAwait func()

	// innerLive: the store's feed is live now, and not paused, so events
	// also go through it (as they would without hints: the store's feed
	// is sent nothing it was not sent before). innerUp: it is live, as it
	// last said, paused or not.
	innerLive atomic.Bool
	innerUp   atomic.Bool
	// paused: hints reach this process, so it does not read the store's
	// feed (pause.go); lastHeard: when it last took a hint from another
	// process (local monotonic, plus one; 0: never). pmu serializes
	// pausing and resuming.
	paused    atomic.Bool
	lastHeard atomic.Int64
	pmu       sync.Mutex
	// reachedFor and reachCheck: pause.go's constants, and every,
	// record.go's (tests shorten them).
	reachedFor, reachCheck time.Duration
	every                  struct{ refresh, put, full time.Duration }

	hmu sync.Mutex // serializes calls of the handler
	h   driver.FeedHandler

	mu        sync.Mutex
	conn      net.PacketConn // nil: not listening
	advertise string
	key       []byte
	peersByID map[string]peer
	// interest: for each key, where processes that announced they wait
	// for a claim of it take hints, and until when (store time);
	// waitingFor: the same for each claim.
	interest   map[string]map[string]waiter
	waitingFor map[claimID]map[string]waiter
	// owners: for claims this process waits for, where the Held hints
	// about each came from (its owner), and until when that is kept
	// (store time): Tell.
	owners map[claimID]waiter
	// recent: the announcements this process sent lately, for the
	// processes it learns of next, within resendWithin (newpeer.go's
	// constant; tests lengthen it).
	recent       map[claimID]recentWaiting
	resendWithin time.Duration
	seq          uint64
	guard        *guard
	origin       time.Time
	// deferred: the ends put off by endDefer (transport.go) not yet
	// sent; stopped: the socket is closing or closed, and nothing is
	// put off any more. deferring counts the deferred sends under way,
	// which closeConn waits for before it closes the socket.
	deferred  map[*deferredEnd]struct{}
	stopped   bool
	deferring sync.WaitGroup
}

// peer is another process's record, as last read or heard.
type peer struct {
	addr    *net.UDPAddr
	expires time.Time // store time
}

var _ driver.Feed = (*Feed)(nil)

// New returns a Feed over store and the store's feed inner. The Roles of
// store must have Peers. inner is its Roles.Feed, which its Roles.FeedPause
// pauses, or nil if none. It does no I/O: Follow listens.
func New(store driver.Store, inner driver.Feed, cfg Config) (*Feed, error) {
	roles := store.Roles()
	ps := roles.Peers
	if ps == nil {
		return nil, errors.New("hint: the store cannot record peers (no driver.Roles.Peers)")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	var id [10]byte
	_, _ = rand.Read(id[:])
	var pauser driver.FeedPauser
	if inner != nil {
		pauser = roles.FeedPause
	}
	f := &Feed{
		store: store, peers: ps, inner: inner, pauser: pauser, cfg: cfg,
		id:           fmt.Sprintf("%x", id),
		peersByID:    make(map[string]peer),
		ready:        make(chan struct{}),
		interest:     make(map[string]map[string]waiter),
		waitingFor:   make(map[claimID]map[string]waiter),
		owners:       make(map[claimID]waiter),
		recent:       make(map[claimID]recentWaiting),
		deferred:     make(map[*deferredEnd]struct{}),
		origin:       time.Now(),
		reachedFor:   reachedFor,
		reachCheck:   reachCheck,
		resendWithin: resendWithin,
	}
	f.every.refresh, f.every.put, f.every.full = refreshEvery, putEvery, fullEvery
	f.guard = newGuard(store.ServerTime, func() time.Duration { return time.Since(f.origin) }, f.cfg.Rate, f.cfg.Burst)
	return f, nil
}

// Replay implements driver.Feed: the store's feed's (hints are never
// replayed).
func (f *Feed) Replay() time.Duration {
	if f.inner == nil {
		return 0
	}
	return f.inner.Replay()
}

// Addr returns the address this Feed advertises, once it listens. It is ""
// before, or if it could not listen.
func (f *Feed) Addr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.advertise
}

// Follow implements driver.Feed: it follows hints and the store's feed
// until stop. It follows the store's feed, if any, listens for hints and
// records this process in the store. If it cannot listen, it logs why and
// delivers the store's feed alone.
func (f *Feed) Follow(h driver.FeedHandler) (stop func()) {
	if !f.following.CompareAndSwap(false, true) {
		return func() {}
	}
	f.h = h
	var stopInner func()
	if f.inner != nil {
		stopInner = f.inner.Follow(innerHandler{f})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if err := f.listen(); err != nil {
		f.cfg.Logger.Warn("dsync: direct hints are off: "+err.Error(), slog.String("listen", f.cfg.Listen))
		f.setReady()
	} else {
		wg.Add(3)
		go func() { defer wg.Done(); f.receive() }()
		go func() { defer wg.Done(); f.keepRecord(ctx) }()
		go func() { defer wg.Done(); f.watchReach(ctx) }()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			f.closeConn()
			wg.Wait()
			if stopInner != nil {
				stopInner()
			}
		})
	}
}

// listen opens the socket and settles the address advertised.
func (f *Feed) listen() error {
	conn, err := net.ListenPacket("udp", f.cfg.Listen)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(conn.LocalAddr().String())
	adv := f.cfg.Advertise
	if adv == "" {
		adv = f.cfg.Listen
	}
	host, aport, _ := net.SplitHostPort(adv)
	if aport == "0" {
		aport = port
	}
	f.mu.Lock()
	f.conn, f.advertise = conn, net.JoinHostPort(host, aport)
	f.mu.Unlock()
	return nil
}

// deliver hands e to the handler, one call at a time.
func (f *Feed) deliver(call func(driver.FeedHandler)) {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	call(f.h)
}

// innerHandler passes the store's feed on to the Feed's handler.
type innerHandler struct{ f *Feed }

// While the store's feed is paused (pause.go), what it says is kept
// from the handler, which was told it is down.

func (i innerHandler) Live(gen uint64) {
	f := i.f
	f.hmu.Lock()
	defer f.hmu.Unlock()
	f.innerUp.Store(true)
	if f.paused.Load() {
		return
	}
	f.innerLive.Store(true)
	f.h.Live(gen)
}

// Down passes the store's feed's failure on, but never as off for good:
// hints still carry events, so the Client goes on announcing its waiters
// and publishing ends (to hints only).
func (i innerHandler) Down(err error, off bool) {
	f := i.f
	f.hmu.Lock()
	defer f.hmu.Unlock()
	f.innerUp.Store(false)
	f.innerLive.Store(false)
	if f.paused.Load() {
		return
	}
	if off {
		err = fmt.Errorf("%w; direct hints still wake waiters", err)
	}
	f.h.Down(err, false)
}

func (i innerHandler) Event(e driver.Event) {
	f := i.f
	f.hmu.Lock()
	defer f.hmu.Unlock()
	if f.paused.Load() {
		return
	}
	f.counts.endArrived(e, false) // the store's feed came first
	f.h.Event(e)
}

// Publish implements driver.Feed: it sends e as a hint and through the
// store's feed. The hint goes to the processes that can use it. The store's
// feed carries e while that feed is live, and then its error is Publish's
// (hints are sent best effort). Otherwise Publish fails if no hint could be
// sent (this process does not listen, has not read the hint key yet, or
// knows no other process), so that a waiter announces itself again at its
// next look.
func (f *Feed) Publish(ctx context.Context, e driver.Event) error {
	if e.Kind == driver.Held {
		f.send(e) // hints only, best effort: a Held lost costs a look
		return nil
	}
	f.counts.announced(e)
	if f.inner != nil && f.innerLive.Load() {
		f.send(e)
		return f.inner.Publish(ctx, e)
	}
	if e.Kind == driver.Waiting {
		f.awaitReady(ctx)
	}
	if f.send(e) == 0 {
		return errNotSent
	}
	return nil
}

// Tell tells, by direct hints only, that e now has a need of 1
// (driver.Event.Need). e is a Waiting that this process made already; other
// events are not told. Tell is best effort. It tells the process that owns
// the claim, as its Held hints for it came from: the only one that acts on
// a need. If none came, it tells every process recorded. Its receiver
// records the need and tells its handler nothing, unless it has no record
// of that Waiting: then it stands for it. (A Waiting makes the owner answer
// with a Held to every waiter of the claim, and the waiter next in line in
// each process look.) The store's feed is not sent it. It reports whether a
// hint was sent.
func (f *Feed) Tell(e driver.Event) bool {
	if e.Kind != driver.Waiting || e.Need != 1 {
		return false
	}
	m := msg{kind: kindNext, key: e.Key, epoch: e.Epoch, proc: e.Proc, until: e.Until}
	now := f.store.ServerTime()
	f.mu.Lock()
	f.toldNeedOneLocked(claimID{e.Key, e.Epoch})
	o, ok := f.owners[claimID{e.Key, e.Epoch}]
	var to []dest
	if !ok || !o.until.After(now.Earliest) {
		to = f.peerDestsLocked(now.Earliest)
	}
	f.mu.Unlock()
	if len(to) > 0 {
		return f.sendTo(m, to) > 0
	}
	return f.sendTo(m, []dest{o.dest()}) > 0
}

// readyWait bounds how long a Publish waits for a process that just
// started following to be ready to send hints (see awaitReady).
const readyWait = 2 * time.Second

// awaitReady waits, at most readyWait or until ctx ends, until this
// process can send hints: a process's first waiter announces itself as
// the Feed starts following (with hints by default, the waiter's wait
// starts it), when reading the key and the others' records is under
// way (three requests). Without the wait, that announcement
// would go nowhere, and the waiter would learn of its turn at its poll.
// Once a wait has run out, announcements wait no more (the store may
// refuse the records: they would each wait in vain).
func (f *Feed) awaitReady(ctx context.Context) {
	if f.gaveUp.Load() {
		return
	}
	select {
	case <-f.ready:
		return
	default:
	}
	t := time.NewTimer(readyWait)
	defer t.Stop()
	if f.onAwait != nil {
		f.onAwait()
	}
	select {
	case <-f.ready:
	case <-ctx.Done():
	case <-t.C:
		f.gaveUp.Store(true)
	}
}

func (f *Feed) setReady() { f.readyOnce.Do(func() { close(f.ready) }) }

var errNotSent = errors.New("hint: not sent (not listening, the hint key not yet read, or no process known)")

// Peers returns the IDs of the other processes this one sends hints to.
// They are as last read from the store or heard from (for status pages and
// tests).
func (f *Feed) Peers() []string {
	now := f.store.ServerTime().Earliest
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, p := range f.peersByID {
		if p.expires.After(now) {
			ids = append(ids, id)
		}
	}
	return ids
}

// ID returns this process's peer ID, as others list it (Peers).
func (f *Feed) ID() string { return f.id }
