package queue

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/xid"
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
	// OutageGrace (zero: none) is recorded in this engine's claims, and
	// its renewals keep the store's record of up-time
	// (driver.UptimeStore), when the store serves that record; on a
	// store that does not, it counts as zero. Waiters judge a claim
	// with a grace dead only when the store's record of up-time also
	// proves it (judge_outage.go, doc_outage.go); its owner may
	// suspend its session at its local deadline instead of retiring it,
	// and resume it if its check allows (Engine.Suspend, resume.go). It
	// is at most MaxGrace, in whole milliseconds (a store keeps it so).
	OutageGrace time.Duration
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
		return errors.New("ViewTrust and AcquireWindow must be positive")
	}
	if c.Quantum <= 0 || c.Rate < 2 || c.Margin < c.Quantum || c.Span < 4*c.Margin {
		//lint:ignore ST1005 the message opens with the name of Config's field, spelled as the field is.
		return errors.New("Quantum and Rate must be positive, Margin at least Quantum, and Span at least 4 × Margin")
	}
	if c.OutageGrace < 0 || c.OutageGrace > MaxGrace || c.OutageGrace%time.Millisecond != 0 {
		return fmt.Errorf("OutageGrace %v must be in [0, %v], in whole milliseconds", c.OutageGrace, MaxGrace)
	}
	if c.PruneDelay < 2*(c.ViewTrust+c.AcquireWindow) {
		return fmt.Errorf("PruneDelay %v must be at least 2 × (ViewTrust + AcquireWindow) = %v",
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
//
// The Engine itself claims (Claim, TryClaim: claim.go, claimrun.go),
// walks (Walk: walk.go, and its steps in walkread.go, walkfloor.go,
// full.go and walkhold.go), grants by the grant rule (grant.go, as a
// planted error changes it: planted.go; and chained holds: tip.go) and
// prunes (claim.go). Every other concern is a part of its own, with its
// own state and lock if it has any, whose exported methods are the
// Engine's: its sessions (OpenSession,
// RenewSession, ConfirmedExpiry: session.go; OwnUptime, Grace:
// session_uptime.go; Suspend and SuspendOn, whose Suspension checks a
// suspended session's resume: resume.go), the judge of claims below a
// walker and of their sessions (SessionAlive, ReadExpired: ended.go), its
// segments (Agree, LearnSpan, Span, Refresh, CoverEnd, Sweep, MinIdle:
// segment.go, span.go, history.go, refresh.go, sweep.go), the end queue
// (Flush, Pending, OnLanded: end.go), the done records (ReadDone,
// MarkDone: done.go; DoneUnder: planted_claims.go), the reads of a
// key's queue (Head, Queue, QueueRead: head.go) and what it knows of each
// key (Drops: keys.go).
// doc_types.go says what each owns, and what its lock guards.
type Engine struct {
	*plant
	*keys
	*sessions
	*judge
	*segments
	*ends
	*doneRecords
	*queues
	holds *holds  // its own holds and ends, for chained holds (holds.go)
	rd    *reader // the store, counting reads (run.go)
	store Store   // rd, as a Store
	clock Times
	cfg   Config

	// floorDrops counts the passed claims dropped below a floor
	// (FloorDrops).
	floorDrops atomic.Int64
}

// New returns an engine over store, judging time by clock.
func New(store Store, clock Times, cfg Config) (*Engine, error) {
	if store == nil || clock == nil {
		return nil, errors.New("nil store or clock")
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
	p := &plant{}
	rd := newReader(store)
	ks := newKeys(cfg.MaxKeys)
	segs := &segments{plant: p, store: rd, maint: store.Roles().Maintenance, clock: clock, cfg: cfg, keys: ks}
	segs.spanNs.Store(int64(cfg.Span))
	ss := newSessions(p, rd, clock, cfg)
	jd := newJudge(p, rd, clock)
	hs := newHolds(p)
	return &Engine{
		plant:       p,
		keys:        ks,
		sessions:    ss,
		judge:       jd,
		segments:    segs,
		ends:        &ends{store: rd, holds: hs, pending: make(map[string]Doc)},
		doneRecords: &doneRecords{plant: p, store: rd, clock: clock, host: cfg.Host, pid: cfg.PID},
		queues:      &queues{clock: clock, keys: ks, segments: segs, judge: jd, rd: rd},
		holds:       hs,
		rd:          rd,
		store:       rd,
		clock:       clock,
		cfg:         cfg,
	}, nil
}

// CeilMilli rounds t up to BSON's millisecond resolution, so that a stored
// expiry is never earlier than the computed one.
func CeilMilli(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		return r.Add(time.Millisecond).UTC()
	}
	return t.UTC()
}
