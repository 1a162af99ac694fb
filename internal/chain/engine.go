package chain

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Config holds the protocol's timing constants (see the package
// documentation for why they exist and how they relate).
type Config struct {
	// ViewTrust: a claim's insert is proven above every pruned epoch by
	// the key's coverage as known less than ViewTrust before it was sent
	// (see claimrun.go).
	ViewTrust time.Duration
	// AcquireWindow: an insert proven by the coverage known before it
	// counts only if its reply arrived less than AcquireWindow after it
	// was sent; otherwise the coverage is judged again after the reply.
	AcquireWindow time.Duration
	// PruneDelay: a key's documents below the floor of its gate of
	// bucket b are deleted only once the store's time is PruneDelay past
	// the start of bucket b+1 (see Prune in the package documentation).
	// It must be at least twice ViewTrust + AcquireWindow: the proof
	// needs it to exceed their sum, and the factor leaves room for the
	// drift between two processes' monotonic clocks.
	PruneDelay time.Duration
	// Span is the length of a bucket of store time (segment.go): every
	// process on a store must use the same, which the store's protocol
	// document records (Prepare). A segment in use costs each process with
	// claims in it one gate insert per Span.
	Span time.Duration
	// Quantum and Rate: a segment starting at store time t has base
	// ⌊t/Quantum⌋ × Rate, and no claim takes more than Rate epochs per
	// Quantum. Margin (at least Quantum) is taken off every coverage.
	Quantum time.Duration
	Rate    uint64
	Margin  time.Duration
	// NewID makes session IDs and claim nonces. Default: xid.
	NewID func() string
	// Host and PID name this process in its claims, for people (dsync
	// status).
	Host string
	PID  int
	// MaxKeys bounds the keys whose knowledge the engine keeps beyond
	// those with a Claim in progress or a claim not yet ended (see
	// state). Default (0): 4,096. Knowledge dropped is read again when
	// needed, so a smaller bound costs reads, never safety (the
	// simulation runs some owners with a bound of 1).
	MaxKeys int
}

// DefaultConfig returns the constants dsync uses.
func DefaultConfig() Config {
	return Config{
		ViewTrust:     time.Second,
		AcquireWindow: 2 * time.Second,
		PruneDelay:    6 * time.Second,
		Span:          5 * time.Minute,
		Quantum:       time.Second,
		Rate:          1 << 20,
		Margin:        time.Second,
	}
}

func (c Config) validate() error {
	if c.ViewTrust <= 0 || c.AcquireWindow <= 0 {
		return errors.New("chain: ViewTrust and AcquireWindow must be positive")
	}
	if c.Quantum <= 0 || c.Rate < 2 || c.Margin < c.Quantum || c.Span < 4*c.Margin {
		return errors.New("chain: Quantum and Rate must be positive, Margin at least Quantum, and Span at least 4 × Margin")
	}
	if c.PruneDelay < 2*(c.ViewTrust+c.AcquireWindow) {
		return fmt.Errorf("chain: PruneDelay %v must be at least 2 × (ViewTrust + AcquireWindow) = %v",
			c.PruneDelay, 2*(c.ViewTrust+c.AcquireWindow))
	}
	return nil
}

// Bounds of the engine's caches. Everything in them may be dropped at any
// time: it is read again when needed.
const (
	maxKeys     = 4096 // keys whose knowledge is kept (Config.MaxKeys)
	maxExpiries = 4096 // session expiries remembered
	maxHeads    = 4096 // claims confirmed to hold at their insert
)

// Engine runs the queue protocol of one process over a Store. It is safe
// for concurrent use.
type Engine struct {
	store Store
	clock Times
	cfg   Config

	mu   sync.Mutex
	keys map[string]*keyState
	// expiries remembers the highest expiry read of each session. A stored
	// expiry only grows, so a session read alive until X is alive until X
	// whatever has happened since: a waiter that looks at its blocker
	// again reads only the marker. (A store emptied or restored can lose
	// the documents behind it; waiting until X is then merely cautious.)
	expiries map[string]time.Time
	// readDead remembers the sessions a read found expired by their
	// expiry, judged by the clock of the writes (ReadExpired): dead for
	// good, since their owners stopped relying on them before that
	// expiry. A stored expiry that grows past it later was raised by a
	// renewal or an insert that landed late. Each is kept until the time
	// such a late write can have raised it to has passed.
	readDead map[string]time.Time
	// absent remembers, for sessions whose documents were all found
	// missing, the run of reads that found them so (see noteAbsent). Such
	// a session is dead only once it stayed missing for its TTL (ended).
	absent map[string]absence
	// heads holds the nonces of claims whose insert confirmed that they
	// hold at once (the claim below them, released here, is still in the
	// store), so that the Walk which follows reads nothing.
	heads map[string]struct{}
	// heldBelow holds, by nonce, the claims that may have been live below
	// a weighted claim when it held, until it ends (tip.go).
	heldBelow map[string][]heldRef
	// endedOwn holds, by nonce, this engine's claims whose end marker
	// landed, in two generations (tip.go).
	endedOwn [2]map[string]ownEnd
	// rechecked holds, by key, when chained holds last read the end
	// markers of claims counted live below them (recheckLive).
	rechecked map[string]time.Duration
	// ends holds end markers whose insert had an unknown outcome, by ID,
	// to be sent again until one is confirmed (Flush): a claim must never
	// stay unended while its session lives on.
	ends map[string]Doc
	// landed is told of each end that Flush lands (OnLanded).
	landed func(Doc)
	// renewals is where each session opened here is renewed (see
	// RenewSession), with what its claims carry. An entry goes once its
	// session has gone unrenewed for two of its TTLs: its owner's
	// deadline has passed by then.
	renewals map[string]*renewal
	// pins counts, by key, the Claim calls in progress and the claims they
	// made that have not ended: their keys' knowledge (the segment, its
	// gate and floor) is kept while they need it (see state).
	pins map[string]int
	// history is the nonce of the store's protocol document as this
	// engine read or inserted it last: the store's history (history.go).
	history string
	// spanNs is the bucket span in force: Config.Span, or the store's
	// (Agree).
	spanNs atomic.Int64
	// spanLost: a protocol document read after Agree named another span
	// (span.go). This engine then relies on no segment any more, and
	// lostSpan (under mu) is the error its starts and joins return.
	spanLost atomic.Bool
	lostSpan *SpanError
	// drops counts the keys whose knowledge state dropped (Drops).
	drops atomic.Int64
	// floorDrops counts the passed claims dropped below a floor
	// (FloorDrops).
	floorDrops atomic.Int64
	// rr reads runs of a key's queue, if the store can (run.go); reads
	// and inRead count the reads this engine sent and those answered, so
	// that a walk knows whether it read anything after the run that
	// confirmed its claim.
	rr     driver.RunReader
	noRuns atomic.Bool   // rr answered ErrRunsUnsupported
	reads  atomic.Uint64 // counts every read's (and run's) send and its reply (run.go)
	inRead atomic.Int64  // reads and runs sent and not yet answered

	bug Bug
}

// keyState is what this process knows of a key. Every field is a fact
// about the chain as the store held it when it was learned; none is acted
// on without the store confirming it (see Claim and Walk).
type keyState struct {
	// newest is an epoch known to have existed (0: none known). An insert
	// of epoch E+1 is sent only when E is known to have existed (F1).
	newest uint64
	// tip is the release of epoch newest, when this process released
	// it. The next claim re-inserts that claim's shadow together with its
	// own insert: the duplicate key proves the claim still in the store
	// (see Claim and tip.go).
	tip tipRelease
	// gap is a missing epoch a walk found with no floor that counts above
	// it (see gap.go): the next claim starts below it. 0: none.
	gap uint64
	// seg is the segment all of the above belongs to (0: none known),
	// cover the highest bucket whose gate is known to name it, and floor
	// that gate's floor (see segment.go and floor.go).
	seg   uint64
	cover int64
	floor Floor
	// history is the store's history (history.go) in which seg's gate
	// was learnt, as that gate records it: the claims made on this
	// knowledge record it (Doc.History), and hold only in it; its
	// refreshes' gates record it too.
	history string
	// own is the highest floor this process can vouch for itself: a
	// claim of seg that held with every lower claim ended. The gates it
	// inserts record the higher of own and floor.
	own Floor
	// mine are this process's claims of seg not yet pruned (epoch →
	// nonce and sending time), so that a prune deletes them without
	// reading them; pruned is the highest bucket whose gate's floor this
	// process has pruned below, and prunedTo the epoch below which it
	// pruned (see prune.go).
	mine     map[uint64]mineRec
	pruned   int64
	prunedTo uint64
	// strayUntil: until then (store time), a start of the key meets the
	// gates of a segment of another history of the store (history.go).
	strayUntil time.Time
}

// hasTip reports whether ks knows the release of its newest epoch.
func (ks *keyState) hasTip() bool { return ks.newest > 0 && ks.tip.Epoch == ks.newest }

// New returns an engine over store, judging time by clock.
func New(store Store, clock Times, cfg Config) (*Engine, error) {
	if store == nil || clock == nil {
		return nil, errors.New("chain: nil store or clock")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return xid.New().String() }
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = maxKeys
	}
	e := &Engine{
		store: store, clock: clock, cfg: cfg,
		keys:      make(map[string]*keyState),
		expiries:  make(map[string]time.Time),
		readDead:  make(map[string]time.Time),
		absent:    make(map[string]absence),
		heads:     make(map[string]struct{}),
		heldBelow: make(map[string][]heldRef),
		endedOwn:  [2]map[string]ownEnd{{}, {}},
		rechecked: make(map[string]time.Duration),
		ends:      make(map[string]Doc),
		renewals:  make(map[string]*renewal),
		pins:      make(map[string]int),
	}
	e.rr, _ = store.(driver.RunReader)
	e.store = readCounter{Store: store, reads: &e.reads, inRead: &e.inRead}
	e.spanNs.Store(int64(cfg.Span))
	return e, nil
}

// state returns key's entry, creating it; e.mu must be held.
//
// Past Config.MaxKeys entries, it drops the knowledge of every key on which this
// engine has no claim in progress or not yet ended: a claim relies on the
// segment and gate it entered until it holds, and then on their coverage,
// so dropping theirs would send them back to the store (or make a claim
// give up an insert that landed, or a hold fail to start) for every key
// another goroutine adds. The keys kept do not count toward the bound, so
// that a process with more claims than it does not scan them all for each
// new key.
func (e *Engine) state(key string) *keyState {
	ks := e.keys[key]
	if ks == nil {
		if len(e.keys) >= e.cfg.MaxKeys+len(e.pins) {
			for k := range e.keys {
				if e.pins[k] == 0 {
					delete(e.keys, k)
					e.drops.Add(1)
				}
			}
		}
		ks = &keyState{}
		e.keys[key] = ks
	}
	return ks
}

// Drops returns how many times the engine dropped a key's knowledge to
// stay within Config.MaxKeys.
func (e *Engine) Drops() int64 { return e.drops.Load() }

// FloorDrops returns how many claims weighted waiters passed live and
// then dropped unread, as below the floor of the gate that covers them
// (full.go: dropBelowFloor).
func (e *Engine) FloorDrops() int64 { return e.floorDrops.Load() }

// pin and unpin count a Claim call or an unended claim on key (see
// state).
func (e *Engine) pin(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pins[key]++
}

func (e *Engine) unpin(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pins[key]--; e.pins[key] <= 0 {
		delete(e.pins, key)
	}
}

func (e *Engine) snapshot(key string) keyState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ks := e.keys[key]; ks != nil {
		return *ks
	}
	return keyState{}
}

// learnNewest records that epoch existed. A newer epoch than the known
// tip makes the tip stale.
func (e *Engine) learnNewest(key string, epoch uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.state(key)
	ks.newest = max(ks.newest, epoch)
}

// learnTip records a release this process made, as the tip if its epoch
// is the newest known.
func (e *Engine) learnTip(m tipRelease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.state(m.Key)
	if m.Epoch >= ks.newest {
		ks.newest = m.Epoch
		ks.tip = m
	}
}

// forget drops what is known of key's newest epoch, after an insert of
// unknown outcome: inserting above an epoch that may not exist would break
// F1.
func (e *Engine) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ks := e.keys[key]; ks != nil {
		ks.newest, ks.tip = 0, tipRelease{}
	}
}

// forgetAll drops everything learned of every key, once the store showed
// that it lost some of it (ErrReset). Session expiries stay: waiting until
// an expiry once read is only cautious.
func (e *Engine) forgetAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.keys)
	clear(e.heads)
}

func (e *Engine) expiry(session string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.expiries[session]
	return t, ok
}

func (e *Engine) learnExpiry(session string, expires time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.expiries) >= maxExpiries {
		clear(e.expiries)
	}
	if expires.After(e.expiries[session]) {
		e.expiries[session] = expires
	}
	delete(e.absent, session)
}

// confirmHead records that c holds: its insert proved every lower epoch
// ended.
func (e *Engine) confirmHead(c *Claim) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.heads) >= maxHeads {
		clear(e.heads)
	}
	e.heads[e.headID(c)] = struct{}{}
}

// takeHead reports (once) whether c was confirmed to hold.
func (e *Engine) takeHead(c *Claim) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.heads[e.headID(c)]
	delete(e.heads, e.headID(c))
	return ok
}

func (e *Engine) headID(c *Claim) string {
	if e.has(BugHeadsByKey) {
		return c.Key
	}
	return c.Nonce
}

// CeilMilli rounds t up to BSON's millisecond resolution, so that a stored
// expiry is never earlier than the computed one.
func CeilMilli(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		return r.Add(time.Millisecond).UTC()
	}
	return t.UTC()
}
