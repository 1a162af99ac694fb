package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// judge decides whether a claim below a walker has ended: by its end
// marker, else by its session, whose expiry it may find past (it then
// inserts the claim's dead marker). It remembers what its reads taught of
// sessions: the highest expiry read of each (a stored expiry only grows),
// the runs of reads that found one missing, and those found expired by
// readers (ReadExpired). Its lock is held only inside its methods, never
// across a request.
type judge struct {
	*plant
	store Store
	clock Times
	// uptime reads the store's record of up-time (nil: the store keeps
	// none, and every claim is judged by its expiry: judge_outage.go).
	uptime driver.UptimeStore
	// stamp, if set (Engine.SetStamp), has this engine's own session
	// renewed at once (judgeSession).
	stamp atomic.Pointer[func(context.Context) bool]

	mu sync.Mutex
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
}

func newJudge(p *plant, store Store, clock Times) *judge {
	return &judge{plant: p, store: store, clock: clock, uptime: store.Roles().Uptime,
		expiries: make(map[string]time.Time), readDead: make(map[string]time.Time), absent: make(map[string]absence)}
}

// ended reports whether claim d has ended, reading its marker and, if it
// has none, its session; a claim whose session expired is marked dead.
// marker is the end marker (read, or the dead marker written).
//
// A session counts as expired once its highest expiry — of its documents,
// of what this engine read before, and of what the claim carries (Exp) —
// is earlier than the earliest possible server time before the reads. A
// session whose documents are all missing counts as dead only after they
// stayed missing for the claim's TTL, from the reply of the first read
// that found them so to the send of the last: its owner either found its
// session gone at a renewal meanwhile (and retired it) or let its
// deadline pass. So does one found expired without its first generation
// (see judgedByExpiry). Claims without a TTL (written by an older dsync)
// count missing as dead at once.
func (j *judge) ended(ctx context.Context, d Doc) (ended bool, kind string, marker Doc, b Blocker, err error) {
	endID := EndID(d.Key, d.Epoch, d.Nonce)
	m, found, err := j.store.Get(ctx, endID)
	if err != nil {
		return false, "", Doc{}, Blocker{}, err
	}
	if found {
		return true, m.Kind, m, Blocker{}, nil
	}
	return j.unended(ctx, d)
}

// markedEnded is ended for readers that must not write: d has ended only
// if its end marker is stored; a claim whose session expired is not
// ended by it (unended would insert its dead marker).
func (j *judge) markedEnded(ctx context.Context, d Doc) (ended bool, kind string, marker Doc, err error) {
	m, found, err := j.store.Get(ctx, EndID(d.Key, d.Epoch, d.Nonce))
	if err != nil || !found {
		return false, "", Doc{}, err
	}
	return true, m.Kind, m, nil
}

// blockerOf describes the live claim d, with the highest expiry of its
// session known: the one d carries, or a read's.
func (j *judge) blockerOf(d Doc) Blocker {
	exp := d.Exp
	if known, ok := j.expiry(d.Session); ok && known.After(exp) {
		exp = known
	}
	return Blocker{Epoch: d.Epoch, Owner: d.Owner, Session: d.Session, ExpiresAt: exp, Terms: terms(d), Waiter: d.Waiter}
}

// unended is ended for a claim d found without an end marker: live while
// its session may live, and marked dead otherwise.
func (j *judge) unended(ctx context.Context, d Doc) (ended bool, kind string, marker Doc, b Blocker, err error) {
	endID := EndID(d.Key, d.Epoch, d.Nonce)
	earliest := j.clock.ServerNow().Earliest
	b = j.blockerOf(d)
	if !b.ExpiresAt.Before(earliest) {
		return false, "", Doc{}, b, nil
	}
	live, b, err := j.judgeSession(ctx, d, earliest, b)
	if err != nil {
		return false, "", Doc{}, Blocker{}, err
	}
	if live {
		return false, "", Doc{}, b, nil
	}
	// The session expired before the read was sent (and, with a grace,
	// the record of up-time proves it dead), or has been missing for its
	// TTL: its owner stopped relying on it at its local deadline,
	// earlier still. Record that, for good.
	dead := Doc{ID: endID, Key: d.Key, Epoch: d.Epoch, Kind: KindDead, Nonce: d.Nonce, Session: d.Session, Sent: j.clock.ServerNow().Latest}
	err = j.store.Insert(ctx, dead)
	if err != nil && !errors.Is(err, ErrExists) {
		return false, "", Doc{}, Blocker{}, err
	}
	return true, KindDead, dead, Blocker{}, nil
}

// sessionLives reads the session of claim d, whose expiry as known (b's)
// is earlier than earliest, and decides whether it may still live: read
// with a later expiry, or expired but not proven dead by ev (the record
// of up-time read before, for a claim with a grace), or missing for less
// than d's TTL. If so, b is returned with when to look again; unproven
// says the session expired but the record did not prove it dead.
func (j *judge) sessionLives(ctx context.Context, d Doc, earliest time.Time, b Blocker, ev outageEvidence) (live, unproven bool, _ Blocker, err error) {
	exp := b.ExpiresAt
	rt := readTimes{sent: j.clock.Mono(), storeSent: j.clock.ServerNow().Earliest}
	s, found, err := j.store.GetSession(ctx, d.Session)
	if err != nil {
		return false, false, Blocker{}, err
	}
	rt.replied, rt.storeReplied = j.clock.Mono(), j.clock.ServerNow().Earliest
	switch {
	case j.judgedByExpiry(s, found, earliest):
		j.learnExpiry(s.ID, s.ExpiresAt)
		if s.ExpiresAt.After(exp) {
			b.ExpiresAt = s.ExpiresAt
		}
		if !b.ExpiresAt.Before(earliest) {
			return true, false, b, nil
		}
		if !j.outageProves(ev, b.ExpiresAt) {
			b.ExpiresAt = j.lookAgain(d)
			return true, true, b, nil
		}
	case !j.deadOnceMissing(d):
		// Missing for the TTL as of this read's send, not its reply: the
		// read may have landed long before its reply came, and the owner
		// re-created its session since (see noteAbsent).
		run := j.noteAbsent(d.Session, rt, d.TTL)
		if wait, missing := run.missingFor(j, rt, d.TTL); missing < d.TTL {
			b.ExpiresAt = j.clock.ServerNow().Latest.Add(wait)
			return true, false, b, nil
		}
	}
	return false, false, b, nil
}

// judgedByExpiry reports whether a session read (s, found), sent at
// earliest possible server time earliest, can be judged by its expiry.
// Otherwise it counts as missing.
//
// A session found with its first generation can: that document was
// confirmed before any claim named the session, so its collection was
// not dropped since, and its documents hold every renewal confirmed (an
// expiry only rises; cleaners delete only expired documents). One found
// without it may have been dropped (or its first generation cleaned once
// expired): an insert of a later generation sent before the drop, held
// back and landing after it, brings the session back with that insert's
// old expiry, while its owner holds on renewals confirmed since, whose
// documents went with the drop. Such a session, expired, counts as
// missing: dead only after the claim's TTL (see noteAbsent). Not expired,
// it is alive until then, whatever brought it back.
func (j *judge) judgedByExpiry(s Session, found bool, earliest time.Time) bool {
	return found && j.expiryCounts(s, earliest)
}

// noteAbsent records that session's documents were found missing by a
// read of times rt, and returns the run of reads that have found them
// missing without a break since (its first reply, local and the store's): a run
// of such reads, each replying at most two TTLs after the one before it
// was sent (a waiter reads again within about one TTL). A run with a
// longer gap starts again: the session may have come back unseen in the
// gap. A read that finds the session ends the run (learnExpiry).
//
// The gap is counted from the earlier read's send, not its reply, so that
// it bounds the time between the two reads' landing whatever their round
// trips took. That bound is what makes the rule safe for a sessions
// collection emptied once every three TTLs or less often. Suppose a
// session's documents vanish at D1, its owner re-creates them at R (a
// renewal of unknown outcome goes on as an insert of the next generation,
// or an insert lands late) and they vanish again at D2, and a waiter's
// run spans both. Its first read landed after D1 and missed R, so R and
// D2 fall between two of its reads that landed less than two TTLs apart:
// D2 - R < 2 TTL. The owner's renewals found nothing after D1 until R, so
// R came before the deadline of its last renewal before D1: R - D1 < TTL.
// So D2 - D1 < 3 TTL. With vanishings further apart, no run spans two,
// and the session did not come back before the run's last read landed:
// the owner counts no renewal after the one before D1, whose deadline
// passed within a TTL of that renewal's send, before the first read
// replied (ended judges the TTL from that reply to the last read's send).
func (j *judge) noteAbsent(session string, rt readTimes, ttl time.Duration) absence {
	j.mu.Lock()
	defer j.mu.Unlock()
	if run, ok := j.absent[session]; ok && j.runGoesOn(run, rt.replied, ttl) {
		run.lastSent = max(run.lastSent, rt.sent)
		j.absent[session] = run
		return run
	}
	if len(j.absent) >= maxExpiries {
		clear(j.absent)
	}
	run := absence{since: rt.replied, lastSent: rt.sent, storeSince: rt.storeReplied}
	j.absent[session] = run
	return run
}

// readTimes is when a read of a session was sent and answered: on this
// process's monotonic clock, and as the earliest possible store time.
type readTimes struct {
	sent, replied           time.Duration
	storeSent, storeReplied time.Time
}

// absence is a run of reads that found a session's documents missing:
// the local monotonic reply time of the first, and the send time of the
// last; and the first's reply as the earliest possible store time.
type absence struct {
	since, lastSent time.Duration
	storeSince      time.Time
}

// missingFor returns how long run, ended by the read of times rt, found
// its session missing (what ended judges against the claim's TTL), and
// how long after rt's reply it will have been missing for ttl (0 once it
// has). Both its own clock and the store's time must show the TTL: the
// safety argument above counts on this process's clock, and the store's
// time keeps a clock that jumps ahead of real time (a step) from making
// a run look a TTL long early. (The public-API simulation found a
// waiter that judged a session dead across a forward step of its clock,
// and held beside the session's owner.)
func (run absence) missingFor(j *judge, rt readTimes, ttl time.Duration) (wait, missing time.Duration) {
	local := absentAsOf(j, rt.sent, rt.replied) - run.since
	store := absentAsOf(j, rt.storeSent, rt.storeReplied).Sub(run.storeSince)
	wait = max(run.since+ttl-rt.replied, run.storeSince.Add(ttl).Sub(rt.storeReplied), 0)
	return wait, min(local, store)
}

// SessionAlive reads a session and reports whether it had not expired
// when the read was sent, with its expiry. A waiter whose wake-ups work
// checks only this when its blocker's session may have run out.
func (j *judge) SessionAlive(ctx context.Context, id string) (alive bool, expires time.Time, err error) {
	earliest := j.clock.ServerNow().Earliest
	s, found, err := j.store.GetSession(ctx, id)
	if err != nil || !j.judgedByExpiry(s, found, earliest) {
		return false, time.Time{}, err
	}
	j.learnExpiry(id, s.ExpiresAt)
	return !s.ExpiresAt.Before(earliest), s.ExpiresAt, nil
}

func (j *judge) expiry(session string) (time.Time, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	t, ok := j.expiries[session]
	return t, ok
}

// learnExpiry records an expiry read of session: it ends a run of reads
// that found the session missing (noteAbsent).
func (j *judge) learnExpiry(session string, expires time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.expiries) >= maxExpiries {
		clear(j.expiries)
	}
	if expires.After(j.expiries[session]) {
		j.expiries[session] = expires
	}
	delete(j.absent, session)
}
