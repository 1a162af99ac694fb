package apisim

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// world is one seed's simulation: the shared store, the processes, the
// network's faults, and what was seen.
type world struct {
	mu    sync.Mutex
	seed  int64
	rng   *rand.Rand
	rates rates

	mem     *memory.Store
	sess    *sessions
	members *leadertest.MemoryMembers
	procs   []*proc
	actors  []Actor

	// The operator empties the collections "while no lock is held or
	// awaited": ops counts the operations under way; while maint is not
	// nil, no operation begins (it is closed when they may), and drained
	// is closed when the last one ends; opCtx ends the operations under
	// way when he wants to. (Channels, not a sync.RWMutex: a goroutine
	// blocked on a mutex would keep synctest's fake time from advancing.)
	ops      int
	maint    chan struct{}
	drained  chan struct{}
	opCtx    context.Context
	opCancel context.CancelFunc

	inflight sync.WaitGroup // requests on their way, which land even after their senders
	stall    stalls         // the stalled link (stall.go)

	hist    History
	fig     Figures
	lastSes time.Time // the last emptying of the sessions collection
	// revokeRng draws the operator's revokes (revoke.go); nil: the seed
	// has none.
	revokeRng *rand.Rand
	revoked   map[string]time.Time // when each session was revoked
	trace     *trace               // TestDebugSeed's (trace.go); nil otherwise

	// grace is every Client's outage grace (outage.go; 0: none), outage
	// the store-wide outage under way.
	grace  time.Duration
	outage storeOutage

	// sets: the workers lock lock sets too (Options.Sets, sets.go), and
	// lives keeps their claims' lives (set_claims.go).
	sets  bool
	lives claimLives
}

// rates is a seed's mix of faults: each kind's chance per request, or
// whether the seed has it at all.
type rates struct {
	slow, lost, heldBack, torn float64
	maxSlow                    time.Duration
	procFaults                 map[string]bool
	emptyings, sessEmptyings   bool
}

func newWorld(seed int64) *world {
	w := &world{seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 0x61706973696d)), mem: memory.New(), sess: newSessions(), lives: newClaimLives()}
	w.fig.Ops = make(map[string]int)
	w.fig.Faults = make(map[string]int)
	w.opCtx, w.opCancel = context.WithCancel(context.Background())
	r := w.rng
	on := func(p float64) bool { return r.Float64() < p }
	w.rates = rates{
		slow: 0.15 * r.Float64(), lost: 0.04 * r.Float64(), heldBack: 0.03 * r.Float64(), torn: 0.3 * r.Float64(),
		maxSlow:    time.Duration(20+r.IntN(300)) * time.Millisecond,
		procFaults: map[string]bool{"unreachable": on(0.7), "hang": on(0.7), "pause": on(0.6), "step": on(0.5), "restart": on(0.6)},
		emptyings:  on(0.5), sessEmptyings: on(0.4),
	}
	w.stall = newStalls(seed, w.rates.emptyings)
	w.revokeRng, w.revoked = newRevokeRng(seed), make(map[string]time.Time)
	if tracing {
		w.trace = &trace{}
	}
	return w
}

// planRequest decides what the network does to a request of p (and
// counts it). hang, if not nil, holds the request until the store
// answers p again; down: p cannot reach the store.
func (w *world) planRequest(p *proc, op string) (pl plan, hang chan struct{}, down bool) {
	p.mu.Lock()
	down, hang = p.down, p.hang
	p.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fig.Requests++
	down = down || w.outage.down
	if hang == nil {
		hang = w.outage.hang
	}
	if down {
		w.fig.Faults["req-unreachable"]++
		return plan{}, nil, true
	}
	if hang != nil {
		w.fig.Faults["req-hung"]++
	}
	r := w.rng
	pl.there = time.Duration(r.IntN(3)) * time.Millisecond
	pl.back = time.Duration(r.IntN(3)) * time.Millisecond
	switch x := r.Float64(); {
	case x < w.rates.heldBack && isWrite(op):
		// Held back in the network: lands after its sender gave up, and
		// after the sender's later requests.
		pl.there = p.cfg.TTL/2 + time.Duration(r.Int64N(int64(3*p.cfg.TTL)))
		w.fig.Faults["held-back"]++
	case x < w.rates.heldBack+w.rates.slow:
		pl.there += time.Duration(r.Int64N(int64(w.rates.maxSlow)))
		pl.back += time.Duration(r.Int64N(int64(w.rates.maxSlow)))
		w.fig.Faults["slow"]++
	}
	if r.Float64() < w.rates.lost {
		pl.lost = true
		w.fig.Faults["reply-lost"]++
	}
	if r.Float64() < w.rates.torn {
		pl.torn = true
		w.fig.Faults["torn"]++
	}
	return pl, hang, false
}

// tearGap is how far apart the parts of a torn request land.
func (w *world) tearGap() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Duration(w.rng.IntN(20)) * time.Millisecond
}

// perm is the order in which the documents of an InsertEach land.
func (w *world) perm(n int, shuffle bool) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !shuffle {
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		return p
	}
	return w.rng.Perm(n)
}

// landed tells the oracle that a document of p landed.
func (w *world) landed(p *proc, d driver.Doc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.liveDoc(p, d)
	if d.Kind != driver.KindClaim {
		return
	}
	k := claimKey{d.Key, d.Epoch}
	p.claims[k] = append(p.claims[k], claimRec{session: d.Session, owner: d.Owner, at: time.Now()})
	if _, ok := p.known[d.Key]; !ok {
		p.known[d.Key] = time.Now()
	}
}

// confirmed tells the oracle that a reply confirmed session id of p, for
// a request sent at sent that carried the expiry expires.
//
// The library counts the deadline from when it computed expires, which
// may be well before the request that carried it was sent: a renewal
// whose update of its generation fails inserts the next generation with
// the same expiry. Counted from sent alone, the deadline was up to a
// request's timeout late, and the checkers judged a hold that another
// process took over after the stored expiry (rightly: the owner's own
// deadline had passed) as valid at once with the new one (exclusion and
// limit violations, a few per thousand seeds with contrib/gocron's
// Locker beside the primitives). expires is at least the store's time
// at that computation plus the TTL (the memory store's time is exact),
// so expires-TTL bounds the computation's time from above, and the
// deadline stays an upper bound of the library's.
func (w *world) confirmed(p *proc, id string, sent, expires time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := p.leases[id]
	if l == nil {
		l = &leaseLog{ttl: p.cfg.TTL, resumes: w.grace > 0}
		p.leases[id] = l
	}
	if computed := expires.Add(-l.ttl); computed.Before(sent) {
		sent = computed
	}
	l.updates = append(l.updates, leaseUpdate{at: time.Now(), deadline: sent.Add(l.ttl - driver.Margin(l.ttl))})
}

// doneReply tells the oracle that a reply carried the done record of key
// naming token to p.
func (w *world) doneReply(p *proc, key string, token uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := claimKey{key, token}
	p.dones[k] = append(p.dones[k], time.Now())
}

// rand returns a duration in [lo, hi).
func (w *world) rand(lo, hi time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

// chance reports true with probability p.
func (w *world) chance(p float64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.Float64() < p
}

func (w *world) count(what string) {
	w.mu.Lock()
	w.fig.Ops[what]++
	w.mu.Unlock()
}

func (w *world) compacted(n int64) {
	w.mu.Lock()
	w.fig.Compacted += int(n)
	w.mu.Unlock()
}

func (w *world) fault(kind string) {
	w.mu.Lock()
	w.fig.Faults[kind]++
	w.mu.Unlock()
}

// op begins an operation: it waits while the operator empties the
// collections, and returns a context that ends when he wants the
// operations under way to end, or when parent ends, and the function that
// ends the operation.
func (w *world) op(parent context.Context) (context.Context, func()) {
	w.mu.Lock()
	for w.maint != nil {
		m := w.maint
		w.mu.Unlock()
		<-m
		w.mu.Lock()
	}
	w.ops++
	oc := w.opCtx
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(oc, cancel)
	return ctx, func() {
		stop()
		cancel()
		w.mu.Lock()
		w.ops--
		if w.ops == 0 && w.drained != nil {
			close(w.drained)
			w.drained = nil
		}
		w.mu.Unlock()
	}
}

// empty empties the collections while no lock is held or awaited: it
// ends the operations under way, waits for them and for the read claims
// that linger after them, as the store shows them (opwait.go; maxTTL:
// the longest TTL), empties, and lets them go on after a while. If a
// read claim is still held after the longest wait, it leaves the
// collections as they are. Requests on their way land whenever they
// land.
func (w *world) empty(maxTTL time.Duration) {
	w.mu.Lock()
	w.maint = make(chan struct{})
	w.opCancel()
	w.opCtx, w.opCancel = context.WithCancel(context.Background())
	var drained chan struct{}
	if w.ops > 0 {
		w.drained = make(chan struct{})
		drained = w.drained
	}
	w.mu.Unlock()
	if drained != nil {
		<-drained
	}
	if !w.awaitReads(maxTTL) {
		w.mu.Lock()
		close(w.maint)
		w.maint = nil
		w.mu.Unlock()
		return
	}
	w.mem.Reset()
	w.sess.empty()
	w.tracef("EMPTY all")
	w.mu.Lock()
	w.hist.Emptyings = append(w.hist.Emptyings, time.Now())
	w.emptiedLives()
	w.fig.Emptyings++
	w.lastSes = time.Now()
	w.mu.Unlock()
	w.releaseStalls()
	time.Sleep(w.rand(0, 500*time.Millisecond))
	w.mu.Lock()
	close(w.maint)
	w.maint = nil
	w.mu.Unlock()
}

// emptySessions empties the sessions collection alone, locks held or
// not, as docs/operations.md allows at most once in three TTLs.
func (w *world) emptySessions(maxTTL time.Duration) {
	w.mu.Lock()
	if !w.lastSes.IsZero() && time.Since(w.lastSes) < 3*maxTTL {
		w.mu.Unlock()
		return
	}
	w.lastSes = time.Now()
	w.fig.SessionEmptyings++
	// Every process's sessions end at once: a fault of all of them.
	w.hist.ProcFaults = append(w.hist.ProcFaults, ProcFault{Proc: -1, Kind: "sessions emptied", From: w.lastSes, To: w.lastSes})
	w.mu.Unlock()
	w.sess.empty()
	w.tracef("EMPTY sessions")
}
