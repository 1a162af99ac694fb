package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
)

// An owner is one process: an engine, its session (a queue.Lease, as the
// dsync keeper keeps it), workers that claim keys, and its clock.
type owner struct {
	s    *sim
	pid  int
	name string
	eng  *queue.Engine

	crashed bool
	// pausedUntil: stopped by SIGSTOP until then (true time);
	// suspendedUntil: the machine is suspended until then. Nothing of the
	// owner runs before the later of the two.
	pausedUntil, suspendedUntil time.Duration
	// suspends are the owner's suspends, for timers that count only awake
	// time (the planted bug).
	suspends []span

	// rate: the owner's clock runs at 1+rate times true time.
	rate float64
	// sample is the owner's last server-time sample: v, with error err,
	// taken at local time mono.
	sample struct {
		v    time.Time
		mono time.Duration
		err  time.Duration
	}
	// timerLag: how late, at most, the owner's timers run (a loaded host).
	timerLag time.Duration

	sess     *simSession
	sessions []*simSession // every session opened, for the storm check
	holds    map[*queue.Claim]*simSession
	// claims counts claims made and not yet ended (a restore waits for
	// none).
	claims int
}

type span struct{ from, to time.Duration }

// simSession is a session and its lease.
type simSession struct {
	id    string
	lease *queue.Lease
	// pred is the deadline the rule predicts from replies in time (local);
	// renewals are the true send times of its renewals; over is when a
	// renewal was confirmed at or after the deadline (0: never), after
	// which the session is over and must not be renewed again; after
	// counts the renewals sent after that. capSent is the bound the
	// coverage of the keys held put on the renewal in flight (local; 0:
	// none): the rule extends a lease no further than that.
	pred     time.Duration
	renewals []time.Duration
	over     time.Duration
	after    int
	capSent  time.Duration
	// sus is the session's suspension while its lease is suspended (on
	// outage seeds), and giveUp when its owner gives it up (local):
	// simresume_test.go.
	sus    *queue.Suspension
	giveUp time.Duration
}

func newOwner(s *sim, pid int) *owner {
	o := &owner{s: s, pid: pid, name: fmt.Sprintf("o%d", pid), holds: make(map[*queue.Claim]*simSession)}
	o.rate = (2*s.rng.Float64() - 1) * simDrift
	o.timerLag = []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}[s.rng.IntN(4)]
	o.resample()
	cfg := simConfig()
	if s.twice != nil {
		cfg.Quantum = simTwiceQuantum
	}
	cfg.NewID = func() string { s.ids++; return fmt.Sprintf("s%d", s.ids) }
	if s.outage != nil {
		cfg.OutageGrace = s.outage.grace
		if s.outage.span > 0 {
			cfg.Span = s.outage.span
		}
	}
	if pid%2 == 0 {
		// Every other owner keeps the knowledge of one key at most beyond
		// those it claims: each other key it turns to drops the rest, so
		// its claims and walks read again what they would have known.
		cfg.MaxKeys = 1
	}
	if pid == s.otherSpan {
		// A process run with another bucket span (its starts and joins
		// are refused while the store records the others').
		cfg.Span = 2 * simSpan
		if s.otherSpanLen > 0 {
			cfg.Span = s.otherSpanLen
		}
	}
	eng, err := queue.New(net{s}, ownerClock{o}, cfg)
	if err != nil {
		panic(err) // simConfig is valid
	}
	eng.SetBug(s.bug)
	o.eng = eng
	return o
}

func (o *owner) stoppedUntil() time.Duration { return max(o.pausedUntil, o.suspendedUntil) }

// mono is the owner's local clock: true time, drifting.
func (o *owner) mono() time.Duration { return o.monoAt(o.s.now) }

func (o *owner) monoAt(t time.Duration) time.Duration {
	return time.Duration(float64(t) * (1 + o.rate))
}

// trueAt is the true time when the owner's clock reads m.
func (o *owner) trueAt(m time.Duration) time.Duration {
	return time.Duration(float64(m)/(1+o.rate)) + 1
}

// resample takes a server-time sample: the server's time now, off by up
// to its error, as a round trip of up to twice the error measures it.
func (o *owner) resample() {
	err := 200*time.Microsecond + time.Duration(o.s.rng.Int64N(int64(3*time.Millisecond)))
	noise := time.Duration(o.s.rng.Int64N(int64(2*err))) - err
	o.sample.v, o.sample.mono, o.sample.err = o.s.server.now().Add(noise), o.mono(), err
}

// ownerClock is the engine's clock: the owner's local clock, and a
// server-time estimate from its last sample, widened as clockcheck
// widens it: by the sample's error, by the drift the local clock may have
// had since, and by the member skew (a failover since the sample).
type ownerClock struct{ o *owner }

func (c ownerClock) Mono() time.Duration { return c.o.mono() }

func (c ownerClock) ServerNow() queue.Interval {
	o := c.o
	el := o.mono() - o.sample.mono
	if o.s.sbug == simBugNarrowEstimate {
		t := o.sample.v.Add(el)
		return queue.Interval{Earliest: t, Latest: t}
	}
	lo := time.Duration(float64(el) / (1 + simDrift))
	hi := time.Duration(float64(el)/(1-simDrift)) + 1
	return queue.Interval{
		Earliest: o.sample.v.Add(lo - o.sample.err - simSkew),
		Latest:   o.sample.v.Add(hi + o.sample.err + simSkew),
	}
}

// timer runs fn at true time at, as a timer of the owner's process: not
// while the process is stopped (then at once when it runs again), and up
// to timerLag late. With simBugAwakeTimers, a timer that a suspend
// carried past its time fires only at the watcher's next check after the
// resume.
func (o *owner) timer(at time.Duration, fn func()) {
	s := o.s
	armed := s.now
	var fire func()
	fire = func() {
		if o.crashed {
			return
		}
		if until := o.stoppedUntil(); until > s.now {
			s.at(until, fire)
			return
		}
		if s.sbug == simBugAwakeTimers {
			if late := o.awakeOnly(armed, at); late > s.now {
				s.at(late, fn)
				return
			}
		}
		fn()
	}
	lag := time.Duration(0)
	if o.timerLag > 0 {
		lag = time.Duration(s.rng.Int64N(int64(o.timerLag)))
	}
	s.at(max(at, s.now)+lag, fire)
}

// awakeOnly is when a timer armed at armed for at fires if it counts
// awake time only: later by the time suspended in between, unless the
// watcher, checking every simTimerStep of awake time after the resume,
// re-arms it sooner.
func (o *owner) awakeOnly(armed, at time.Duration) time.Duration {
	var slept, resumed time.Duration
	for _, sp := range o.suspends {
		if lo, hi := max(sp.from, armed), min(sp.to, at+slept); lo < hi {
			slept += sp.to - lo
			resumed = sp.to
		}
	}
	if slept == 0 {
		return at
	}
	phase := time.Duration(o.s.rng.Int64N(int64(simTimerStep))) + 1
	return min(at+slept, max(at, resumed+phase))
}

// sleepUntil parks the actor until true time at, by a timer.
func (o *owner) sleepUntil(a *actor, at time.Duration) {
	o.timer(at, func() { o.s.step(a) })
	a.block()
}

func (o *owner) record(ev history.Event) {
	ev.Worker, ev.PID, ev.Owner = o.name, o.pid, o.name
	ev.TTL, ev.Margin = int64(simTTL), int64(simMargin)
	o.s.log = append(o.s.log, ev)
}

// deadline is ss's deadline in true time.
func (o *owner) deadline(ss *simSession) time.Duration { return o.trueAt(ss.lease.Deadline()) }

// armDeadline retires ss at its deadline, by a timer, unless a renewal
// confirmed in time has moved it.
func (o *owner) armDeadline(ss *simSession) {
	o.timer(o.deadline(ss), func() { o.expire(ss) })
}

// retire ends a session for good: its holds are lost, and its claims are
// never used again.
func (o *owner) retire(ss *simSession) {
	ss.lease.Retire()
	o.s.stats.sessionsLost++
	for c, hs := range o.holds {
		if hs == ss {
			o.record(history.Event{Ev: history.EvLost, Key: c.Key, Token: c.Epoch, T: int64(o.s.now), DL: int64(o.deadline(ss)), Src: history.SrcLib})
		}
	}
}

// keeper opens the owner's session and renews it as its lease says,
// applying each outcome as the dsync keeper does.
func (o *owner) keeper(a *actor) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		if o.sess == nil || o.sess.lease.Retired() {
			sent := o.mono()
			id, _, err := o.eng.OpenSession(ctx, simTTL)
			if err != nil {
				a.sleep(20 * time.Millisecond)
				continue
			}
			lease, ok := queue.NewLease(simTTL, simInterval, sent, o.mono())
			if !ok {
				continue
			}
			lease.SetBug(s.bug)
			o.sess = &simSession{id: id, lease: lease, pred: lease.Deadline()}
			o.sessions = append(o.sessions, o.sess)
			o.armDeadline(o.sess)
			// A backend that made a session deletes the long-expired ones
			// when it closes, which another process may do at any moment:
			// here, as this one opens its session.
			o.cleanSessions(ctx)
		}
		ss := o.sess
		if ss.lease.Suspended() {
			o.suspendedStep(a, ss)
			continue
		}
		o.sleepUntil(a, o.trueAt(ss.lease.Due()))
		if !o.relied(ss) {
			// Past its deadline with the timer yet to run (the owner was
			// paused): nothing is sent, as the dsync keeper does.
			o.expire(ss)
			continue
		}
		ss.renewals = append(ss.renewals, s.now)
		if ss.over > 0 {
			ss.after++
		}
		// Keep the segments of this owner's claims covered, and let the
		// renewal extend the lease no further than the coverage of the
		// keys held.
		_, _ = o.eng.Refresh(ctx, o.heldKeys(ss))
		o.capLease(ss)
		checked := queue.WithRenewalCheck(ctx, func() bool { return o.relied(ss) })
		found, sent, err := o.eng.RenewSession(checked, ss.id, simTTL)
		now := o.mono()
		switch {
		case errors.Is(err, queue.ErrRenewalLate):
			o.expire(ss)
		case err != nil:
			ss.lease.Fail(now)
		case !found:
			if !ss.lease.Retired() {
				o.retire(ss)
			}
		case s.outage != nil && now >= ss.lease.Deadline():
			// Confirmed past the deadline, on an outage seed: the lease
			// is suspended, not retired (simresume_test.go).
			o.expire(ss)
		default:
			o.confirmed(ss, sent, now)
		}
		_, _ = o.eng.Flush(ctx)
	}
}

// relied reports whether ss's owner still relies on it: the guard the
// dsync keeper puts before each renewal and where its expiry is computed
// (lease.Keeper.reliedLocked, queue.WithRenewalCheck). Without it an
// owner woken from a pause past its deadline, before its deadline timer
// runs, would raise the stored expiry of a session readers may have
// found expired, and its claims would read live again. The lease bugs'
// controls run without the guard: it would hide what they plant, which
// only the lease's own rule must catch.
func (o *owner) relied(ss *simSession) bool {
	if ss.lease.Retired() {
		return false
	}
	switch o.s.bug {
	case queue.BugLateConfirmKept, queue.BugLateConfirmExtends:
		return true
	}
	return o.mono() < ss.lease.Deadline()
}

// coverLocal is when the engine's coverage of key's segment ends, on the
// owner's clock (judged from the latest possible store time: early).
func (o *owner) coverLocal(key string) time.Duration {
	end := o.eng.CoverEnd(key)
	if end.IsZero() {
		return 0
	}
	return o.mono() + end.Sub(ownerClock{o}.ServerNow().Latest)
}

// heldKeys returns the keys of ss's holds whose validity has not ended.
func (o *owner) heldKeys(ss *simSession) []string {
	var keys []string
	for c, hs := range o.holds {
		if hs == ss && !ss.lease.Retired() && o.mono() < ss.lease.Deadline() {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// capLease bounds ss's next extensions by the coverage of the keys held
// in it, as the dsync keeper does.
func (o *owner) capLease(ss *simSession) {
	cp := time.Duration(-1)
	for c, hs := range o.holds {
		if hs == ss {
			if l := o.coverLocal(c.Key); cp < 0 || l < cp {
				cp = l
			}
		}
	}
	if cp < 0 {
		cp = 0 // no holds: no bound
	} else if cp == 0 {
		cp = 1 // a hold without coverage: no extension
	}
	ss.lease.SetCap(cp)
	ss.capSent = cp
}

// confirmed applies a renewal sent at sent and confirmed at now.
func (o *owner) confirmed(ss *simSession, sent, now time.Duration) {
	s := o.s
	if now < ss.pred {
		// The rule, independently of the lease: a reply before the
		// deadline in force counts, as far as the coverage of the keys
		// held when the renewal was sent reaches.
		ext := sent + simTTL - simMargin
		if ss.capSent > 0 {
			ext = min(ext, ss.capSent)
		}
		ss.pred = max(ss.pred, ext)
	}
	if now >= ss.lease.Deadline() && !ss.lease.Retired() {
		s.stats.lateConfirms++
		if ss.over == 0 {
			ss.over = s.now
		}
	}
	switch ss.lease.Confirm(sent, now) {
	case queue.LeaseExtended:
		o.armDeadline(ss)
		for c, hs := range o.holds {
			if hs == ss {
				o.record(history.Event{Ev: history.EvDeadline, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.deadline(ss)), Src: history.SrcLib})
				o.record(history.Event{Ev: history.EvDeadline, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.trueAt(ss.pred)), Src: history.SrcPred})
			}
		}
	case queue.LeaseLate:
		o.retire(ss)
	}
}

// sampler takes a new server-time sample now and then.
func (o *owner) sampler(a *actor) {
	for o.s.now < simLength {
		a.sleep(500*time.Millisecond + time.Duration(o.s.rng.Int64N(int64(1500*time.Millisecond))))
		o.resample()
	}
}

func (o *owner) worker(a *actor, keys []string) {
	s, ctx := o.s, a.ctx()
	again := "" // the key a stalled hold's worker claims again
	for s.now < simLength {
		ss := o.sess
		if ss == nil || ss.lease.Retired() || ss.lease.Suspended() {
			// No claim in a suspended session (the dsync keeper's Enter
			// waits for its verdict).
			a.sleep(10 * time.Millisecond)
			continue
		}
		if s.quiet() || s.twice.quiet(o) {
			// Nothing claimed while an operator waits to empty the
			// store (simstall_test.go, simspan_test.go).
			a.sleep(10 * time.Millisecond)
			continue
		}
		key := keys[s.rng.IntN(len(keys))]
		if again != "" {
			key = again // a stuck worker's: at once, in the same session
		}
		if key == keyIdle && (s.now > simPhase1 && s.now < simPhase2) {
			a.sleep(10 * time.Millisecond)
			continue
		}
		try := s.rng.Float64() < 0.2
		terms, mode := s.terms(key)
		c, err := o.eng.Claim(ctx, key, o.name, ss.id, terms, try)
		if errors.Is(err, queue.ErrReset) {
			s.stats.storeResets++
		}
		if queue.IsLapsed(err) {
			s.stats.lapses++
		}
		if err != nil {
			a.sleep(time.Duration(5+s.rng.IntN(25)) * time.Millisecond)
			continue
		}
		if key == again {
			s.stuck.claimed(o, ss.id, key)
		}
		again = ""
		o.claims++
		if o.await(a, c, ss, try, mode) {
			again = key
		}
		o.claims--
	}
}

// await waits until claim c of session ss holds, holds it a while and
// releases it; or gives it up (patience, a try, the session's end). It
// reports whether the hold stalled (simstuck_test.go): its worker then
// claims the key again.
func (o *owner) await(a *actor, c *queue.Claim, ss *simSession, try bool, mode string) (stalled bool) {
	s, ctx := o.s, a.ctx()
	start, patience := s.now, time.Duration(100+s.rng.IntN(3000))*time.Millisecond
	if s.slow.on(c.Terms) {
		patience = s.slow.patience()
	}
	for {
		if ss.lease.Retired() {
			_ = o.eng.End(ctx, c, false)
			return
		}
		head, b, err := o.eng.Walk(ctx, c)
		if errors.Is(err, queue.ErrReset) {
			s.stats.storeResets++
			return // the engine gave the claim up
		}
		if queue.IsLapsed(err) {
			s.stats.lapses++
			return // the engine gave the claim up: its segment lapsed
		}
		if err != nil {
			a.sleep(10 * time.Millisecond)
			continue
		}
		if head {
			if ss.lease.Retired() || ss.lease.Suspended() || o.mono() >= ss.lease.Deadline() {
				_ = o.eng.End(ctx, c, false)
				return
			}
			if o.coverLocal(c.Key) < ss.lease.Deadline() {
				// The key's coverage would end before the session's
				// deadline: a hold must not outlive either.
				s.stats.lapses++
				_ = o.eng.End(ctx, c, false)
				return
			}
			o.holds[c] = ss
			if c.Key == keyIdle && s.compacted[keyIdle] {
				s.stats.revivals++
			}
			o.record(history.Event{Ev: history.EvAcquire, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.deadline(ss)), Src: history.SrcLib,
				Mode: mode, Weight: c.Terms.Weight, Limit: c.Terms.Limit})
			hold := time.Duration(s.rng.IntN(300)) * time.Millisecond
			if s.frng.Float64() < 0.05 {
				// A long hold, across renewals and gate refreshes.
				hold = time.Duration(1000+s.frng.IntN(2500)) * time.Millisecond
			}
			if s.slow.on(c.Terms) {
				hold = s.slow.hold(hold)
			}
			hold = s.twice.hold(o, hold)
			stalls := s.stuck.stalls()
			a.sleep(hold)
			o.awaitVerdict(a, ss)
			o.record(history.Event{Ev: history.EvEnd, Key: c.Key, Token: c.Epoch, T: int64(s.now), Lost: ss.lease.Retired()})
			delete(o.holds, c)
			if stalls {
				// The hold stalled: its holder stopped relying on it (its
				// session renews for the others alone), and the claim is
				// released the margin later, the release held back.
				s.stats.stuck++
				a.sleep(simTTL / 20)
				s.stuck.hold(o, c, ss.id)
			}
			_ = o.eng.End(ctx, c, true)
			return stalls
		}
		if try || s.now-start > patience {
			_ = o.eng.End(ctx, c, false)
			return
		}
		wait := simPoll
		if u := b.ExpiresAt.Sub(ownerClock{o}.ServerNow().Earliest) + time.Millisecond; u > 0 && u < wait {
			wait = u
		}
		if s.slow.on(c.Terms) {
			wait = s.slow.wait()
		}
		a.sleep(wait)
	}
}

// observer polls the head of the queue, as Election.Leader does. A poll
// that a reset of the store fell into is not recorded: it may have read
// before the reset and after it.
func (o *owner) observer(a *actor, keys []string) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		a.sleep(time.Duration(20+s.rng.IntN(60)) * time.Millisecond)
		key := keys[s.rng.IntN(len(keys))]
		sent := s.now
		head, found, err := o.eng.Head(ctx, key)
		s.tracef("HEAD %s by %s sent %v -> %v %v %v", key, o.name, sent, head, found, err)
		if err != nil || !found || s.server.lastReset >= sent {
			continue
		}
		s.log = append(s.log, history.Event{Ev: history.EvPoll, Worker: o.name + "-observer", PID: 1000 + o.pid, Key: key, Token: head.Epoch, Owner: head.Owner, T: int64(sent)})
	}
}

// holding reports whether the owner holds a claim whose validity has not
// ended (a crashed owner's holds, and those of a session retired early,
// last until their deadline).
func (o *owner) holding() bool {
	for _, ss := range o.holds {
		if o.s.now < o.deadline(ss)+simMargin {
			return true
		}
	}
	return false
}

// holdingIn reports whether the owner holds a claim of session id whose
// validity has not ended.
func (o *owner) holdingIn(id string) bool {
	for _, ss := range o.holds {
		if ss.id == id && o.s.now < o.deadline(ss) {
			return true
		}
	}
	return false
}

// sweeper compacts idle keys now and then, as a dsync Client holding the
// sweep lock does (two owners sweep: sweeps may overlap).
func (o *owner) sweeper(a *actor) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		a.sleep(simSweepAt/2 + time.Duration(s.rng.Int64N(int64(simSweepAt))))
		_, _ = o.eng.Sweep(ctx, simIdle)
		o.cleanSessions(ctx) // as the mongo driver's Compact does
	}
}

// cleanSessions deletes the sessions that expired more than simRetention
// ago (on outage seeds, outageRetention) by this owner's clock, in a
// delete that may land late and torn.
func (o *owner) cleanSessions(ctx context.Context) {
	_ = net{o.s}.cleanSessions(ctx, ownerClock{o}.ServerNow().Earliest.Add(-o.s.outage.retention()))
}
