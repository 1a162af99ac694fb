package apisim

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// proc is a simulated process: its configuration, the faults it suffers
// (paused, cut off from the store, the store hanging for it, its clock
// stepped), and what the oracle learned from its store.
type proc struct {
	w   *world
	id  int
	cfg procConfig

	mu     sync.Mutex
	paused chan struct{} // not nil while paused; closed at the resume
	down   bool          // the store is unreachable
	hang   chan struct{} // not nil while the store hangs; closed when it answers
	offset time.Duration // how far its clock was stepped forward
	pauses [][2]time.Time
	incs   int // incarnations started (guarded by w.mu)

	// The oracle's view, guarded by w.mu.
	claims map[claimKey][]claimRec  // the claims it inserted that landed, in order (see claimAt)
	known  map[string]time.Time     // when its first claim of each key landed
	leases map[string]*leaseLog     // its sessions' confirmations
	dones  map[claimKey][]time.Time // replies that carried a done record
}

// procConfig is what a process is configured with; processes may
// disagree on each.
type procConfig struct {
	TTL, Span, Idle time.Duration
	Limit           int64 // the semaphore's
}

type claimKey struct {
	key   string
	token uint64
}

type claimRec struct {
	session string
	owner   string // the primitive or candidate that claimed
	at      time.Time
}

// claimAt returns the claim of k that a hold or run beginning at t
// relies on: the last of p's claims of k to land at or before t. A key's
// epochs begin again after an emptying, and a claim held back before it
// (even of an older session of p's) may land after it with the same key
// and epoch: the last to land is not always the hold's. Called with
// p.w.mu held.
func (p *proc) claimAt(k claimKey, t time.Time) (claimRec, bool) {
	var c claimRec
	var ok bool
	for _, r := range p.claims[k] {
		if r.at.After(t) {
			break
		}
		c, ok = r, true
	}
	return c, ok
}

// leaseLog is the confirmations of one session: each a reply that came,
// and the deadline it would set.
type leaseLog struct {
	ttl     time.Duration
	updates []leaseUpdate
	// resumes: the session's Client has an outage grace, so a session
	// past its deadline may be suspended and resumed (expiryAt).
	resumes bool
}

type leaseUpdate struct{ at, deadline time.Time }

// expiry is when the session stopped being valid, by the rule the
// package documents: "a hold is valid until its session's local deadline:
// the monotonic send time of the session's last confirmed open or renewal
// plus the TTL minus a margin of TTL/20. A confirmation that arrives
// after that deadline does not count, and the session is then retired for
// good". The send times are the requests' as the store saw them, at or
// after the library's, so this is at or after the library's deadline.
func (l *leaseLog) expiry() time.Time {
	var d time.Time
	for i, u := range l.updates {
		if !u.at.Before(u.deadline) && i == 0 {
			return u.at // opened too late: never valid
		}
		if i > 0 && !u.at.Before(d) {
			break
		}
		if u.deadline.After(d) {
			d = u.deadline
		}
	}
	return d
}

// expiryAt is expiry for a hold (or run) that began at t. A session of
// a Client with an outage grace is suspended at its deadline rather than
// retired, and a renewal confirmed afterwards may resume it, with a
// deadline counted from that renewal's send (dsync's outage rule): its
// confirmations then form periods, each begun by a confirmation that
// came at or after the deadline so far, and a hold's deadline is that of
// the last period begun at or before its start. This is the credited
// rule's side of the owner: the outage is not held against the session,
// and each period's deadline is, as expiry's, an upper bound of the
// library's. Without a grace, it is expiry.
func (l *leaseLog) expiryAt(t time.Time) time.Time {
	if !l.resumes {
		return l.expiry()
	}
	var d time.Time
	for i, u := range l.updates {
		if i > 0 && !u.at.Before(d) { // past the deadline: a new period
			if t.Before(u.at) {
				return d
			}
			d = time.Time{}
		}
		if !u.at.Before(u.deadline) && d.IsZero() {
			d = u.at // confirmed too late to count
			continue
		}
		if u.deadline.After(d) {
			d = u.deadline
		}
	}
	return d
}

func newProc(w *world, id int, cfg procConfig) *proc {
	return &proc{w: w, id: id, cfg: cfg,
		claims: make(map[claimKey][]claimRec), known: make(map[string]time.Time), leases: make(map[string]*leaseLog), dones: make(map[claimKey][]time.Time)}
}

// waitRunning returns once the process is not paused, or ctx's cause if
// ctx ends first.
func (p *proc) waitRunning(ctx context.Context) error {
	for {
		p.mu.Lock()
		ch := p.paused
		p.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// pause freezes the process for d: it sends nothing, takes no reply in,
// and its timers (its Clock's) fire only when it resumes.
func (p *proc) pause(d time.Duration) {
	p.mu.Lock()
	p.paused = make(chan struct{})
	from := time.Now()
	p.mu.Unlock()
	time.Sleep(d)
	p.mu.Lock()
	close(p.paused)
	p.paused = nil
	p.pauses = append(p.pauses, [2]time.Time{from, time.Now()})
	p.mu.Unlock()
	p.w.faultWindow(p, "pause", from)
	p.w.tracef("p%d PAUSED from %s", p.id, from.Format(tf))
}

// pausedAt returns when the pause that t falls in ended (zero: none).
func (p *proc) pausedAt(t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.pauses {
		if !t.Before(pp[0]) && !t.After(pp[1]) {
			return pp[1]
		}
	}
	return time.Time{}
}

// pausedWithin reports whether the process was paused at some time in
// [a, b].
func (p *proc) pausedWithin(a, b time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.pauses {
		if !pp[0].After(b) && !pp[1].Before(a) {
			return true
		}
	}
	return false
}

// unreachable cuts the process off from the store for d: every request
// fails at once.
func (p *proc) unreachable(d time.Duration) {
	from := time.Now()
	p.setDown(true)
	time.Sleep(d)
	p.setDown(false)
	p.w.faultWindow(p, "unreachable", from)
}

func (p *proc) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
}

// hangFor makes the store hang for the process for d: its requests wait
// (until their senders give up), and land when the hang ends.
func (p *proc) hangFor(d time.Duration) {
	from := time.Now()
	p.mu.Lock()
	p.hang = make(chan struct{})
	p.mu.Unlock()
	defer p.w.faultWindow(p, "hang", from)
	time.Sleep(d)
	p.mu.Lock()
	close(p.hang)
	p.hang = nil
	p.mu.Unlock()
}

// step steps the process's clock forward by d, as a suspend that its
// clock counts does (a monotonic clock never goes back).
func (p *proc) step(d time.Duration) {
	p.mu.Lock()
	p.offset += d
	p.mu.Unlock()
	p.w.faultWindow(p, "step", time.Now())
	p.w.tracef("p%d STEP %v", p.id, d)
}

// clock is a process's clienthook.Clock: time.Now stepped by the
// process's steps, with timers that fire only while it runs.
type clock struct{ p *proc }

// clocked carries p's clock to the Client made over store.
func clocked(store driver.Store, p *proc) driver.Store {
	return clienthook.Wrap(store, clienthook.Settings{Clock: clock{p}})
}

func (c clock) Now() time.Time {
	c.p.mu.Lock()
	off := c.p.offset
	c.p.mu.Unlock()
	return time.Now().Add(off)
}

func (c clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	t := time.AfterFunc(d, func() {
		c.p.waitRunning(context.Background())
		f()
	})
	return t.Stop
}

// faultWindow records that p suffered a fault of kind from from to now.
func (w *world) faultWindow(p *proc, kind string, from time.Time) {
	w.mu.Lock()
	w.hist.ProcFaults = append(w.hist.ProcFaults, ProcFault{Proc: p.id, Kind: kind, From: from, To: time.Now()})
	w.mu.Unlock()
}
