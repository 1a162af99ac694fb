package chain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/xid"
)

// Config holds the protocol's timing constants (see the package
// documentation for why they exist and how they relate).
type Config struct {
	// ViewTrust: a floor read counts for a claim's insert only if it was
	// sent less than ViewTrust before the insert.
	ViewTrust time.Duration
	// AcquireWindow: an insert proven by an earlier floor read counts
	// only if its reply arrived less than AcquireWindow after it was sent;
	// otherwise the floor is read again after the insert.
	AcquireWindow time.Duration
	// PruneDelay: epochs below a floor are deleted only PruneDelay or
	// more after the floor was raised. It must be at least twice
	// ViewTrust + AcquireWindow: the proof needs it to exceed their sum,
	// and the factor leaves room for the drift between two processes'
	// monotonic clocks.
	PruneDelay time.Duration
	// PruneEvery: the holder of every PruneEvery-th epoch raises the floor
	// to it when it releases, and prunes below it PruneDelay later.
	PruneEvery uint64
	// NewID makes session IDs and claim nonces. Default: xid.
	NewID func() string
}

// DefaultConfig returns the constants dsync uses.
func DefaultConfig() Config {
	return Config{
		ViewTrust:     time.Second,
		AcquireWindow: 2 * time.Second,
		PruneDelay:    6 * time.Second,
		PruneEvery:    16,
	}
}

func (c Config) validate() error {
	if c.ViewTrust <= 0 || c.AcquireWindow <= 0 || c.PruneEvery < 2 {
		return errors.New("chain: ViewTrust and AcquireWindow must be positive and PruneEvery at least 2")
	}
	if c.PruneDelay < 2*(c.ViewTrust+c.AcquireWindow) {
		return fmt.Errorf("chain: PruneDelay %v must be at least 2 × (ViewTrust + AcquireWindow) = %v",
			c.PruneDelay, 2*(c.ViewTrust+c.AcquireWindow))
	}
	return nil
}

// maxClaimRounds bounds the inserts of one Claim that keeps losing epochs
// to other processes.
//
// A process that locks and unlocks in a loop while nobody is queued takes
// the next epoch one insert after its release. A process joining it reads
// where the queue ends at most once per Claim (a sorted read, slow on
// FerretDB while the looping process moves on), then walks up one insert
// at a time, which gains on the loop (one insert against its two): it
// needs room to catch up, or it gives up, sleeps, and starts behind again,
// and the looping process keeps the key for itself.
const maxClaimRounds = 32

// maxDups is how many epochs in a row a Claim loses to other processes
// before it reads the key's newest claim instead of trying the next. A lost
// insert is a lookup by _id, the cheapest command there is; the newest-first
// read is a sorted query, which FerretDB answers by decoding every document
// of the collection (a few hundred while a busy key's history awaits
// pruning). Four covers the queue of a handful of processes taking turns.
const maxDups = 4

// maxKeys bounds the per-key cache; it is only an optimization, and
// everything in it is either a permanent fact or dated, so it may be
// dropped at any time.
const maxKeys = 4096

// Engine runs the queue protocol of one process over a Store. It is safe
// for concurrent use.
type Engine struct {
	store Store
	clock Clock
	cfg   Config

	mu   sync.Mutex
	keys map[string]*keyState
	// expiries remembers the latest expiry read of each session. A stored
	// expiry only grows, so a session read alive until X is alive until X
	// whatever has happened since: a waiter that looks at its blocker
	// again reads only the marker.
	expiries map[string]time.Time
	// ends holds end markers whose insert had an unknown outcome, by ID,
	// to be sent again until one is confirmed (Flush): a claim must never
	// stay unended while its session lives on.
	ends map[string]Doc
	// renewals is where each session opened here is renewed (see
	// RenewSession). An entry goes once its session has gone unrenewed
	// for two of its TTLs: its owner's deadline has passed by then.
	renewals map[string]*renewal

	bug Bug
}

// renewal is where the next renewal of a session goes: an update of the
// document of generation gen, or, with insert set, first the insert of
// that generation. mu is held through each renewal, so that two renewals
// of one session are never in flight together.
type renewal struct {
	mu     sync.Mutex
	gen    int
	insert bool
	ttl    time.Duration
	last   time.Duration // local monotonic: the last renewal's send; guarded by Engine.mu
}

// Bug plants a protocol error, for the simulation's negative controls.
type Bug int

const (
	NoBug Bug = iota
	// BugWithdrawAsRelease records withdrawals as releases: walkers stop
	// at a withdrawn claim as if everything below it had ended.
	BugWithdrawAsRelease
	// BugNoFloorProof counts every successful insert, even one that landed
	// in a hole pruning left below the newest epoch.
	BugNoFloorProof
	// BugEndBySession names end markers by epoch and session instead of
	// by the claim's nonce, so withdrawing an insert of unknown outcome can
	// end a later claim of the same epoch in the same session.
	BugEndBySession
	// BugRenewSameGen keeps renewing a session's document after a renewal
	// of it had an unknown outcome: on a store whose updates are not
	// atomic, that renewal can then be applied over a later one and lower
	// the expiry its owner trusts.
	BugRenewSameGen
)

// keyState is what this process knows of a key. Every field is a
// permanent fact about the chain, or dated by when it was learned.
type keyState struct {
	// newest is an epoch known to have existed (0: none known). An insert
	// of epoch E+1 is sent only when E is known to have existed, which
	// makes every epoch below an existing one have existed before it (F2).
	newest uint64
	// settled: every epoch below it has ended, for good.
	settled uint64
	// floor is the value of the last floor read, sent at floorSent (local
	// monotonic); floorRead reports whether there was one.
	floor     uint64
	floorSent time.Duration
	floorRead bool
	// prunes are floors this process raised, with when the raise was
	// confirmed: once PruneDelay has passed, the epochs below may go.
	prunes []pruneMark
}

type pruneMark struct {
	below     uint64
	confirmed time.Duration
}

// New returns an engine over store, judging time by clock.
func New(store Store, clock Clock, cfg Config) (*Engine, error) {
	if store == nil || clock == nil {
		return nil, errors.New("chain: nil store or clock")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return xid.New().String() }
	}
	return &Engine{store: store, clock: clock, cfg: cfg, keys: make(map[string]*keyState), expiries: make(map[string]time.Time), ends: make(map[string]Doc), renewals: make(map[string]*renewal)}, nil
}

// SetBug plants a protocol error (tests only).
func (e *Engine) SetBug(b Bug) { e.bug = b }

// Claim is a place in a key's queue: one epoch, made in one session.
type Claim struct {
	Key     string
	Owner   string
	Session string
	Nonce   string
	Epoch   uint64 // the fencing token once the claim holds
	// checked: every epoch in [checked, Epoch) is known to have ended.
	checked uint64
	// blocker is the claim document of epoch checked−1 that the last walk
	// found live, so that the next walk reads only its marker: a claim
	// document never changes, and the one below a live claim is never
	// pruned (a prune that passed it is caught by the floor check).
	blocker    Doc
	hasBlocker bool
}

// Resume rebuilds a claim from what its owner kept of it (a Walk on it
// starts from the top again).
func Resume(key, owner, session, nonce string, epoch uint64) *Claim {
	return &Claim{Key: key, Owner: owner, Session: session, Nonce: nonce, Epoch: epoch, checked: epoch}
}

// Blocker describes the live claim a waiter waits for.
type Blocker struct {
	Epoch     uint64
	Owner     string
	Session   string
	ExpiresAt time.Time // its session's expiry when read, in server time
}

// BusyError is returned by Claim with try set, when the key's newest
// epoch has not ended.
type BusyError struct {
	Key     string
	Blocker Blocker // zero if the claim was lost in a race
}

func (e *BusyError) Error() string {
	if e.Blocker.Epoch == 0 {
		return fmt.Sprintf("chain: %q taken by another claim", e.Key)
	}
	return fmt.Sprintf("chain: %q held by epoch %d", e.Key, e.Blocker.Epoch)
}

// OpenSession creates a session valid until ttl after the latest possible
// server time at sending. The caller's local deadline for it counts from
// sent, the local monotonic time at sending. On error the session must not
// be used: it may exist or not.
func (e *Engine) OpenSession(ctx context.Context, ttl time.Duration) (id string, sent time.Duration, err error) {
	id = e.cfg.NewID()
	sent = e.clock.Mono()
	expires := CeilMilli(e.clock.ServerNow().Latest.Add(ttl))
	if err := e.store.InsertSession(ctx, Session{ID: id, ExpiresAt: expires}); err != nil {
		return "", 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for other, r := range e.renewals {
		if sent-r.last > 2*r.ttl {
			delete(e.renewals, other)
		}
	}
	e.renewals[id] = &renewal{ttl: ttl, last: sent}
	return id, sent, nil
}

// RenewSession raises the session's expiry to ttl after the latest
// possible server time at sending. found is false when the session no
// longer exists, or was not opened by this engine, or went unrenewed for
// two TTLs. The caller counts the renewal from sent only if the reply came
// before the local deadline in force (a late reply may come from a renewal
// applied after the session had expired and been judged dead). Renewals of
// one session wait for each other.
//
// A renewal updates one document of the session. One whose outcome is
// unknown may still be applied at any time, also after a later renewal of
// the same document; on a store that reads a document and later writes it
// whole (FerretDB), it would then write back its lower expiry. So that
// document is never updated again: the renewal goes at once, and every
// later one after it, to the session's next generation, a new document
// inserted with the expiry (readers take the highest of a session's
// documents). An insert of unknown outcome is sent again by the next
// renewal; it lands once at most, so once one is confirmed (or answered
// ErrExists) the generation is updated like the first.
func (e *Engine) RenewSession(ctx context.Context, id string, ttl time.Duration) (found bool, sent time.Duration, err error) {
	sent = e.clock.Mono()
	expires := CeilMilli(e.clock.ServerNow().Latest.Add(ttl))
	e.mu.Lock()
	r := e.renewals[id]
	if r != nil {
		r.last = sent
	}
	e.mu.Unlock()
	if r == nil {
		return false, sent, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.insert {
		found, err = e.store.RenewSession(ctx, id, r.gen, expires)
		if err == nil || e.bug == BugRenewSameGen {
			return found, sent, err
		}
		r.gen, r.insert = r.gen+1, true
	}
	err = e.store.InsertSession(ctx, Session{ID: id, Gen: r.gen, ExpiresAt: expires})
	switch {
	case err == nil:
		r.insert = false
		return true, sent, nil
	case errors.Is(err, ErrExists):
		// An earlier insert of this generation landed, with an older
		// expiry; no other write to it can be in flight.
		r.insert = false
		found, err = e.store.RenewSession(ctx, id, r.gen, expires)
		if err != nil {
			r.gen, r.insert = r.gen+1, true
		}
		return found, sent, err
	default:
		return false, sent, err
	}
}

// Claim inserts key's next epoch for owner in session: a place at the end
// of the queue, which holds once every lower epoch has ended (Walk).
//
// With try set, it inserts only when the newest epoch has ended, and
// returns a *BusyError otherwise; it never waits.
//
// An error other than *BusyError means the claim may exist: it is then
// withdrawn (now, or by a later Flush), never used.
func (e *Engine) Claim(ctx context.Context, key, owner, session string, try bool) (*Claim, error) {
	if key == "" || owner == "" || session == "" {
		return nil, errors.New("chain: empty key, owner or session")
	}
	ks := e.snapshot(key)
	base, known := ks.newest, ks.newest > 0
	if try && !(known && ks.settled > base) {
		newest, found, err := e.store.Newest(ctx, key)
		if err != nil {
			return nil, err
		}
		if found {
			ended, _, blocker, err := e.ended(ctx, newest)
			if err != nil {
				return nil, err
			}
			if !ended {
				e.learnNewest(key, newest.Epoch)
				return nil, &BusyError{Key: key, Blocker: blocker}
			}
			base, known = newest.Epoch, true
		} else {
			base, known = 0, true
		}
		e.learnNewest(key, base)
	}
	dups, newestRead := 0, false
	for round := range maxClaimRounds {
		if !known && round > 0 {
			newest, found, err := e.store.Newest(ctx, key)
			if err != nil {
				return nil, err
			}
			base, known = 0, true
			if found {
				base = newest.Epoch
			}
		}
		// Without knowledge, try epoch 1: it is never pruned, so its insert
		// succeeds only for a key that never had an epoch.
		epoch := base + 1
		var proofSent time.Duration
		if epoch > 1 && e.bug != BugNoFloorProof {
			floor, sent, err := e.freshFloor(ctx, key)
			if err != nil {
				return nil, err
			}
			if floor >= epoch {
				// Our knowledge is older than the floor: the floor epoch
				// existed, so the next insert may follow it.
				base = floor
				continue
			}
			proofSent = sent
		}
		c := &Claim{Key: key, Owner: owner, Session: session, Nonce: e.cfg.NewID(), Epoch: epoch, checked: epoch}
		if e.bug == BugEndBySession {
			c.Nonce = session
		}
		sent := e.clock.Mono()
		err := e.store.Insert(ctx, Doc{ID: ClaimID(key, epoch), Key: key, Epoch: epoch, Kind: KindClaim, Nonce: c.Nonce, Session: session, Owner: owner})
		replied := e.clock.Mono()
		switch {
		case err == nil:
			proven := epoch == 1 || e.bug == BugNoFloorProof ||
				sent-proofSent < e.cfg.ViewTrust && replied-sent < e.cfg.AcquireWindow
			if !proven {
				// The proof after the insert needs no timing: a floor read
				// after it shows whether a prune had passed the epoch.
				floor, _, err := e.readFloor(ctx, key)
				if err != nil {
					e.abandon(ctx, c)
					return nil, err
				}
				if floor >= epoch {
					e.abandon(ctx, c)
					base = floor
					continue
				}
			}
			e.learnNewest(key, epoch)
			return c, nil
		case errors.Is(err, ErrExists):
			e.learnNewest(key, epoch)
			if try {
				return nil, &BusyError{Key: key}
			}
			base = epoch
			if dups++; dups >= maxDups && !newestRead {
				// Many waiters ahead: read where the queue ends rather
				// than walk up it one insert at a time (once: by the time
				// a second read came back the end would have moved on).
				known, dups, newestRead = false, 0, true
			}
		default:
			e.abandon(ctx, c)
			e.forget(key)
			return nil, err
		}
	}
	return nil, &BusyError{Key: key}
}

// TryClaim is TryLock's one attempt: it claims key only when its newest
// epoch has ended, and returns the claim only if it holds at once;
// otherwise it withdraws what it inserted and returns a *BusyError.
func (e *Engine) TryClaim(ctx context.Context, key, owner, session string) (*Claim, error) {
	c, err := e.Claim(ctx, key, owner, session, true)
	if err != nil {
		return nil, err
	}
	head, blocker, err := e.Walk(ctx, c)
	if err == nil && head {
		return c, nil
	}
	e.abandon(context.WithoutCancel(ctx), c)
	if err != nil {
		return nil, err
	}
	return nil, &BusyError{Key: key, Blocker: blocker}
}

// SessionAlive reads a session and reports whether it had not expired
// when the read was sent, with its expiry. A waiter whose wake-ups work
// checks only this when its blocker's session may have run out.
func (e *Engine) SessionAlive(ctx context.Context, id string) (alive bool, expires time.Time, err error) {
	earliest := e.clock.ServerNow().Earliest
	s, found, err := e.store.GetSession(ctx, id)
	if err != nil || !found {
		return false, time.Time{}, err
	}
	e.learnExpiry(id, s.ExpiresAt)
	return !s.ExpiresAt.Before(earliest), s.ExpiresAt, nil
}

// abandon ends a claim that must never hold: its insert had an unknown
// outcome, or it landed below the floor. The withdrawal is retried by
// Flush if it fails.
func (e *Engine) abandon(ctx context.Context, c *Claim) {
	_ = e.End(ctx, c, false)
}

// Walk reports whether c holds: every lower epoch has ended. If not, it
// returns the live claim c waits for. Walk reads only what it has not
// learned before; a waiter calls it again when the blocker may have ended
// (an event, its session's expiry, or a poll).
//
// An unended claim whose session has expired in server time is ended by a
// dead marker first, so that a late renewal reviving the session cannot
// make it look alive again to anyone.
func (e *Engine) Walk(ctx context.Context, c *Claim) (head bool, blocker Blocker, err error) {
	for {
		ks := e.snapshot(c.Key)
		if c.checked <= 1 || c.checked <= ks.settled {
			e.settle(c.Key, c.Epoch)
			return true, Blocker{}, nil
		}
		epoch := c.checked - 1
		d, found := c.blocker, true
		if !c.hasBlocker || c.blocker.Epoch != epoch {
			d, found, err = e.store.Get(ctx, ClaimID(c.Key, epoch))
			if err != nil {
				return false, Blocker{}, err
			}
		}
		if !found {
			// A hole: pruning deletes only below an epoch that held, after
			// everything below it had ended.
			e.settle(c.Key, epoch+1)
			continue
		}
		ended, kind, b, err := e.ended(ctx, d)
		if err != nil {
			return false, Blocker{}, err
		}
		if !ended {
			if epoch < c.Epoch-1 {
				// Below an ended claim: perhaps left behind by pruning (a
				// marker deleted before its claim, or an insert that landed
				// late in a pruned hole). The floor says.
				floor, _, err := e.readFloor(ctx, c.Key)
				if err != nil {
					return false, Blocker{}, err
				}
				if floor > epoch {
					continue
				}
			}
			c.blocker, c.hasBlocker = d, true
			return false, b, nil
		}
		if kind == KindRelease {
			// It held once: everything below it had ended by then.
			e.settle(c.Key, epoch+1)
			continue
		}
		c.checked = epoch
	}
}

// Head returns the claim at the head of key's queue: the lowest claim that
// has not ended, where every claim below it has. found is false when every
// claim has ended (or the key has none). The head may not know yet that it
// holds, and may still withdraw; but what Head reports never goes back to
// a lower epoch, because ends are permanent and the walk stops at the
// floor, below which a late insert may land.
func (e *Engine) Head(ctx context.Context, key string) (head Doc, found bool, err error) {
	floor, _, err := e.readFloor(ctx, key)
	if err != nil {
		return Doc{}, false, err
	}
	d, ok, err := e.store.Newest(ctx, key)
	if err != nil || !ok {
		return Doc{}, false, err
	}
	top := d.Epoch
	settled := e.snapshot(key).settled // everything below it has ended
	var live []Doc                     // unended claims found, highest first
	for d.Epoch >= max(floor, settled, 1) {
		ended, kind, _, err := e.ended(ctx, d)
		if err != nil {
			return Doc{}, false, err
		}
		if !ended {
			live = append(live, d)
		} else if kind == KindRelease {
			break
		}
		if d.Epoch == 1 {
			break
		}
		next, ok, err := e.store.Get(ctx, ClaimID(key, d.Epoch-1))
		if err != nil {
			return Doc{}, false, err
		}
		if !ok {
			break // a hole: pruned, so everything below has ended
		}
		d = next
	}
	if len(live) == 0 {
		return Doc{}, false, nil
	}
	if live[len(live)-1].Epoch < top {
		// A claim below the top read as live may have lost its marker to
		// a prune that ran after its claim was read; the prune raised the
		// floor first, so a floor read now tells.
		if floor, _, err = e.readFloor(ctx, key); err != nil {
			return Doc{}, false, err
		}
		for len(live) > 0 && live[len(live)-1].Epoch < floor {
			live = live[:len(live)-1]
		}
		if len(live) == 0 {
			return Doc{}, false, nil
		}
	}
	return live[len(live)-1], true, nil
}

// ended reports whether claim d has ended, reading its marker and, if it
// has none, its session; a claim whose session expired is marked dead.
func (e *Engine) ended(ctx context.Context, d Doc) (ended bool, kind string, b Blocker, err error) {
	if ks := e.snapshot(d.Key); d.Epoch < ks.settled {
		return true, KindDead, Blocker{}, nil
	}
	m, found, err := e.store.Get(ctx, EndID(d.Key, d.Epoch, d.Nonce))
	if err != nil {
		return false, "", Blocker{}, err
	}
	if found {
		return true, m.Kind, Blocker{}, nil
	}
	earliest := e.clock.ServerNow().Earliest
	if known, ok := e.expiry(d.Session); ok && !known.Before(earliest) {
		return false, "", Blocker{Epoch: d.Epoch, Owner: d.Owner, Session: d.Session, ExpiresAt: known}, nil
	}
	s, found, err := e.store.GetSession(ctx, d.Session)
	if err != nil {
		return false, "", Blocker{}, err
	}
	if found {
		e.learnExpiry(s.ID, s.ExpiresAt)
	}
	if found && !s.ExpiresAt.Before(earliest) {
		return false, "", Blocker{Epoch: d.Epoch, Owner: d.Owner, Session: d.Session, ExpiresAt: s.ExpiresAt}, nil
	}
	// The session expired before the read was sent (or was cleaned up,
	// long after expiring): its owner stopped relying on it at its local
	// deadline, earlier still. Record that, for good.
	err = e.store.Insert(ctx, Doc{ID: EndID(d.Key, d.Epoch, d.Nonce), Key: d.Key, Epoch: d.Epoch, Kind: KindDead, Nonce: d.Nonce, Session: d.Session})
	if err != nil && !errors.Is(err, ErrExists) {
		return false, "", Blocker{}, err
	}
	return true, KindDead, Blocker{}, nil
}

// End ends c: a release if it held, a withdrawal if not. A release of
// every PruneEvery-th epoch also raises the floor to it, and prunes below
// floors raised PruneDelay or more ago. An error means the marker's fate
// is unknown; Flush sends it again.
func (e *Engine) End(ctx context.Context, c *Claim, held bool) error {
	kind := KindWithdraw
	if held || e.bug == BugWithdrawAsRelease {
		kind = KindRelease
	}
	d := Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: kind, Nonce: c.Nonce, Session: c.Session}
	if err := e.store.Insert(ctx, d); err != nil && !errors.Is(err, ErrExists) {
		e.mu.Lock()
		e.ends[d.ID] = d
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	delete(e.ends, d.ID)
	e.mu.Unlock()
	if held {
		e.settle(c.Key, c.Epoch+1)
		e.learnNewest(c.Key, c.Epoch)
		e.maintain(ctx, c.Key, c.Epoch)
	}
	return nil
}

// Flush sends again the end markers whose outcome was unknown, and
// reports how many are still pending.
func (e *Engine) Flush(ctx context.Context) (pending int, err error) {
	e.mu.Lock()
	docs := make([]Doc, 0, len(e.ends))
	for _, d := range e.ends {
		docs = append(docs, d)
	}
	e.mu.Unlock()
	slices.SortFunc(docs, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	for _, d := range docs {
		ierr := e.store.Insert(ctx, d)
		if ierr != nil && !errors.Is(ierr, ErrExists) {
			err = ierr
			continue
		}
		e.mu.Lock()
		delete(e.ends, d.ID)
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ends), err
}

// maintain raises the floor to a released epoch that is a multiple of
// PruneEvery, and deletes below floors raised PruneDelay or more ago.
// Best effort: failures cost only history kept longer.
func (e *Engine) maintain(ctx context.Context, key string, released uint64) {
	if released%e.cfg.PruneEvery == 0 {
		if err := e.store.RaiseFloor(ctx, key, released); err == nil {
			confirmed := e.clock.Mono()
			e.mu.Lock()
			ks := e.state(key)
			if len(ks.prunes) < 8 {
				ks.prunes = append(ks.prunes, pruneMark{below: released, confirmed: confirmed})
			}
			e.mu.Unlock()
		}
	}
	now := e.clock.Mono()
	var below uint64
	e.mu.Lock()
	ks := e.state(key)
	rest := ks.prunes[:0]
	for _, p := range ks.prunes {
		if now-p.confirmed >= e.cfg.PruneDelay {
			below = max(below, p.below)
		} else {
			rest = append(rest, p)
		}
	}
	ks.prunes = rest
	e.mu.Unlock()
	if below > 2 {
		_ = e.store.Prune(ctx, key, below)
	}
}

// freshFloor returns key's floor from a read sent less than ViewTrust ago,
// reading it if needed, with that read's send time.
func (e *Engine) freshFloor(ctx context.Context, key string) (uint64, time.Duration, error) {
	ks := e.snapshot(key)
	if ks.floorRead && e.clock.Mono()-ks.floorSent < e.cfg.ViewTrust {
		return ks.floor, ks.floorSent, nil
	}
	return e.readFloor(ctx, key)
}

func (e *Engine) readFloor(ctx context.Context, key string) (uint64, time.Duration, error) {
	sent := e.clock.Mono()
	floor, err := e.store.Floor(ctx, key)
	if err != nil {
		return 0, 0, err
	}
	e.mu.Lock()
	ks := e.state(key)
	if !ks.floorRead || sent > ks.floorSent {
		ks.floor, ks.floorSent, ks.floorRead = floor, sent, true
	}
	ks.settled = max(ks.settled, floor)
	ks.newest = max(ks.newest, floor)
	e.mu.Unlock()
	return floor, sent, nil
}

// state returns key's entry, creating it; e.mu must be held.
func (e *Engine) state(key string) *keyState {
	ks := e.keys[key]
	if ks == nil {
		if len(e.keys) >= maxKeys {
			clear(e.keys)
		}
		ks = &keyState{}
		e.keys[key] = ks
	}
	return ks
}

func (e *Engine) snapshot(key string) keyState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ks := e.keys[key]; ks != nil {
		return *ks
	}
	return keyState{}
}

// maxExpiries bounds the session expiries remembered; past it they are
// forgotten (and read again when needed).
const maxExpiries = 4096

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
}

func (e *Engine) learnNewest(key string, epoch uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.state(key)
	ks.newest = max(ks.newest, epoch)
}

func (e *Engine) settle(key string, below uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.state(key)
	ks.settled = max(ks.settled, below)
}

// forget drops what is known of key's newest epoch, after an insert of
// unknown outcome: inserting above an epoch that may not exist would break
// F2. Settled knowledge stays: it is permanent.
func (e *Engine) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ks := e.keys[key]; ks != nil {
		ks.newest = 0
	}
}

// CeilMilli rounds t up to BSON's millisecond resolution, so that a stored
// expiry is never earlier than the computed one.
func CeilMilli(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		return r.Add(time.Millisecond).UTC()
	}
	return t.UTC()
}
