package lease

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The Keeper's suspension (suspend.go), in the world of
// suspend_world_test.go: a Keeper holding k over an engine with an outage
// grace, whose process the test cuts off the store.

// quarter is the probes' period: a quarter of the default renew interval.
const quarter = worldTTL / 3 / 4

// suspendAtDeadline cuts the Keeper's process off, sleeps until the
// deadline of s and until the Keeper is done with it, and returns it.
func (w *world) suspendAtDeadline(s *Session[*claimHold]) time.Time {
	w.po.SetReachable(false)
	d := w.k.Deadline(s)
	sleepUntil(d)
	synctest.Wait()
	return d
}

// TestSuspendAtDeadline: with a grace, at the deadline the hold is lost
// (at the deadline, for a reason that wraps Lost and Suspended), but the
// session is suspended, not retired, and the claim is left unended. Without
// the suspension (ExpireIfDue retiring as without a grace) the session is
// retired there.
func TestSuspendAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		at, lost := h.loss()
		if !errors.Is(lost, errLost) || !errors.Is(lost, errSuspended) || !at.Equal(d) {
			t.Fatalf("the hold's loss: %v at %v; want Lost and Suspended at the deadline %v", lost, at, d)
		}
		if why := w.k.RetiredWith(s); why != nil || !w.suspendedNow(s) {
			t.Fatalf("the session at its deadline: retired with %v, suspended %v; want it suspended", why, w.suspendedNow(s))
		}
		if end := w.end(h); end != "" {
			t.Fatalf("the suspended hold's claim has ended (%s)", end)
		}
	})
}

// TestNoGraceRetiresAtDeadline: at grace 0, with Suspend and Probe set,
// the Keeper retires the session at its deadline as ever, probes nothing,
// and the next Enter opens a new session.
func TestNoGraceRetiresAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, 0)
		defer w.wait()
		h, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		at, lost := h.loss()
		if !errors.Is(lost, errLost) || errors.Is(lost, errSuspended) || !at.Equal(d) {
			t.Fatalf("the hold's loss: %v at %v; want Lost, not Suspended, at the deadline %v", lost, at, d)
		}
		if why := w.k.RetiredWith(s); !errors.Is(why, errLost) || w.suspendedNow(s) {
			t.Fatalf("the session at its deadline: retired with %v, suspended %v; want it retired", why, w.suspendedNow(s))
		}
		time.Sleep(worldTTL)
		for _, c := range w.callsSince(d) {
			if c.op == "probe" {
				t.Fatalf("a probe at %v without a grace", c.at)
			}
		}
		w.po.SetReachable(true)
		s2, err := w.k.Enter(w.ctx)
		if err != nil || s2 == s {
			t.Fatalf("Enter after the retirement = %v, %v; want a new session", s2, err)
		}
		w.k.Leave(s2)
	})
}

// TestSuspendedProbesThenResumes: through an outage of three TTLs, the
// suspended Keeper probes every quarter interval from the deadline and
// sends no renewal; once the store is back, the first probe that replies
// is followed by one renewal, and the check (its evidence read after the
// renewal's reply) resumes the session: the same session and claim, the
// deadline counted from the renewal's send, the lost hold handed to
// Resumed. Renewing at each step instead of probing first sends a renewal
// every quarter interval through the outage.
func TestSuspendedProbesThenResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		mark := w.opsMark()
		back := d.Add(3 * worldTTL)
		sleepUntil(back)
		w.po.SetReachable(true)
		sleepUntil(back.Add(quarter))
		synctest.Wait()

		calls := w.callsSince(d)
		for _, c := range calls {
			if c.op == "renew" && c.at.Before(back) {
				t.Fatalf("a renewal at %v, in the outage", c.at)
			}
		}
		firstOK := slices.IndexFunc(calls, func(c call) bool { return c.op == "probe" && c.err == nil })
		if firstOK < 0 {
			t.Fatalf("no probe replied after the store came back: %v", calls)
		}
		for i, c := range calls[:firstOK] {
			if c.op != "probe" {
				t.Fatalf("a %s at %v, before any probe replied", c.op, c.at)
			}
			if want := d.Add(time.Duration(i) * quarter); !c.at.Equal(want) {
				t.Fatalf("probe %d at %v; want %v, every quarter interval from the deadline", i, c.at, want)
			}
		}
		rest := calls[firstOK+1:]
		if len(rest) != 1 || rest[0].op != "renew" || rest[0].err != nil {
			t.Fatalf("after the first probe that replied: %v; want one renewal, confirmed", rest)
		}
		ops := w.opsFrom(mark)
		// The renewal: a RenewSessionUp, or the insert of the session's
		// next generation (marked) after a renewal of unknown outcome.
		renewed := slices.IndexFunc(ops, func(op string) bool { return op == "RenewSessionUp" || op == "InsertSession" })
		read := slices.Index(ops, "ReadUptime")
		if renewed < 0 || read < renewed {
			t.Fatalf("the store calls while suspended: %v; want the record read after a renewal", ops)
		}
		if w.suspendedNow(s) || w.k.RetiredWith(s) != nil {
			t.Fatalf("the session after the check: suspended %v, retired with %v; want it resumed", w.suspendedNow(s), w.k.RetiredWith(s))
		}
		if got, want := w.k.Deadline(s), rest[0].at.Add(worldTTL-worldTTL/20); !got.Equal(want) {
			t.Errorf("the resumed deadline = %v; want %v, counted from the renewal", got, want)
		}
		if end := w.end(h); end != "" {
			t.Fatalf("the resumed claim has ended (%s)", end)
		}
		if w.mu.Lock(); !slices.Equal(w.resumed, []*claimHold{h}) {
			t.Errorf("Resumed was told %v; want the lost hold", w.resumed)
		}
		w.mu.Unlock()
		s2, err := w.k.Enter(w.ctx)
		if err != nil || s2 != s {
			t.Fatalf("Enter after the resume = %v, %v; want the resumed session", s2, err)
		}
		w.k.Leave(s2)
	})
}

// TestSuspendedRetiresOnDead: cut off alone while another process renews
// every TTL/3, past a TTL of its up-time after the last renewal: once the
// store is back, the check finds the session dead; the Keeper retires it
// and marks the claim dead, and Enter opens a new session.
func TestSuspendedRetiresOnDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		stop := make(chan struct{})
		others := w.other(stop)
		defer others.Wait()
		defer close(stop)
		h, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		sleepUntil(d.Add(worldTTL))
		w.po.SetReachable(true)
		time.Sleep(quarter)
		synctest.Wait()
		if why := w.k.RetiredWith(s); !errors.Is(why, errLost) || w.suspendedNow(s) {
			t.Fatalf("the session after a check on the record: retired with %v, suspended %v; want it retired, dead", why, w.suspendedNow(s))
		}
		if end := w.end(h); end != queue.KindDead {
			t.Fatalf("the claim of the dead session ended with %q; want %q", end, queue.KindDead)
		}
		if err := w.k.AwaitVerdict(w.ctx, s); !errors.Is(err, errLost) {
			t.Errorf("AwaitVerdict after the dead verdict = %v; want the retirement's reason", err)
		}
		s2, err := w.k.Enter(w.ctx)
		if err != nil || s2 == s {
			t.Fatalf("Enter after the dead verdict = %v, %v; want a new session", s2, err)
		}
		w.k.Leave(s2)
	})
}

// TestSuspendedGivesUp: through an outage longer than the grace plus a
// TTL, the session stays suspended until its deadline plus both, then is
// retired (no renewal was ever sent: no probe replied); the dead marker of
// its claim, of unknown outcome then, lands at the engine's next Flush.
// Without giving up the session stays suspended for good.
func TestSuspendedGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		giveUp := d.Add(worldGrace + worldTTL)
		sleepUntil(giveUp.Add(-time.Millisecond))
		synctest.Wait()
		if !w.suspendedNow(s) {
			t.Fatalf("the session is not suspended a millisecond before its time runs out (retired with %v)", w.k.RetiredWith(s))
		}
		sleepUntil(giveUp)
		synctest.Wait()
		if why := w.k.RetiredWith(s); !errors.Is(why, errLost) || w.suspendedNow(s) {
			t.Fatalf("the session at its deadline + grace + TTL: retired with %v, suspended %v; want it retired", why, w.suspendedNow(s))
		}
		for _, c := range w.callsSince(d) {
			if c.op == "renew" {
				t.Fatalf("a renewal at %v, though no probe replied", c.at)
			}
		}
		w.po.SetReachable(true)
		if _, err := w.eng.Flush(w.ctx); err != nil {
			t.Fatal(err)
		}
		if end := w.end(h); end != queue.KindDead {
			t.Fatalf("the claim of the session given up ended with %q; want %q", end, queue.KindDead)
		}
	})
}

// TestEnterWaitsForTheVerdict: while the session is suspended, Enter waits
// (until its ctx ends, with its cause) and no hold joins the session, even
// one whose Start would; once the check resumes it, Enter returns it.
// Without the wait Enter hands the suspended session to a new claim.
func TestEnterWaitsForTheVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		_, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		if w.k.Join(&claimHold{ref: queue.Ref{Key: "k"}, anyDeadline: true}, s) {
			t.Fatal("a hold joined the suspended session")
		}
		cause := errors.New("gave up waiting")
		cctx, cancel := context.WithCancelCause(w.ctx)
		cut := make(chan error, 1)
		go func() {
			_, err := w.k.Enter(cctx)
			cut <- err
		}()
		entered := make(chan *Session[*claimHold], 1)
		go func() {
			s2, err := w.k.Enter(w.ctx)
			if err != nil {
				t.Error(err)
			}
			entered <- s2
		}()
		synctest.Wait()
		select {
		case s2 := <-entered:
			t.Fatalf("Enter returned session %s while it was suspended", s2.ID())
		case err := <-cut:
			t.Fatalf("Enter returned (%v) while the session was suspended", err)
		default:
		}
		cancel(cause)
		if err := <-cut; !errors.Is(err, cause) {
			t.Fatalf("Enter cut short while suspended = %v; want its ctx's cause", err)
		}
		sleepUntil(d.Add(worldTTL))
		w.po.SetReachable(true)
		time.Sleep(quarter)
		synctest.Wait()
		select {
		case s2 := <-entered:
			if s2 != s {
				t.Fatalf("Enter after the resume returned session %s; want the resumed %s", s2.ID(), s.ID())
			}
			w.k.Leave(s2)
			if err := w.k.AwaitVerdict(w.ctx, s); err != nil {
				t.Errorf("AwaitVerdict after the resume = %v; want nil", err)
			}
		default:
			t.Fatalf("Enter still waits after the verdict (suspended %v, retired with %v)", w.suspendedNow(s), w.k.RetiredWith(s))
		}
	})
}

// TestLateConfirmationSuspends: a renewal sent before the deadline and
// confirmed after it, its deadline timer yet to run (a paused process),
// suspends the session, as the timer would, rather than retire it.
// Without the grace's rule in confirmed, the late reply retires it.
func TestLateConfirmationSuspends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		w.mu.Lock()
		w.late = worldTTL
		w.mu.Unlock()
		renewAt := w.k.origin.Add(s.lease.Due())
		sleepUntil(renewAt.Add(time.Millisecond))
		synctest.Wait()
		w.k.mu.Lock()
		w.k.disarmLocked(s) // the timer runs late
		d := w.k.deadlineLocked(s)
		w.k.mu.Unlock()
		sleepUntil(renewAt.Add(worldTTL))
		synctest.Wait()
		if !renewAt.Add(worldTTL).After(d) {
			t.Fatal("the renewal's reply came before the deadline: the test shows nothing")
		}
		if why := w.k.RetiredWith(s); why != nil || !w.suspendedNow(s) {
			t.Fatalf("after a late reply: retired with %v, suspended %v; want it suspended", why, w.suspendedNow(s))
		}
		if _, lost := h.loss(); !errors.Is(lost, errSuspended) {
			t.Fatalf("the hold's loss = %v; want Suspended", lost)
		}
	})
}

// TestNoRenewalOnceGivenUp: a probe sent before the deadline plus the
// grace plus a TTL, its reply after it, the timer that gives up yet to
// run (a paused process), is followed by no renewal: the session's time
// has run out, and a renewal now would raise the expiry of a session its
// owner no longer relies on; it is given up instead. Without the
// renewal's check (stillSuspended) the renewal is sent.
func TestNoRenewalOnceGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		_, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		giveUp := d.Add(worldGrace + worldTTL)
		sleepUntil(giveUp.Add(-300 * time.Millisecond))
		w.k.mu.Lock()
		w.k.disarmLocked(s) // the timer runs late
		w.k.mu.Unlock()
		w.mu.Lock()
		w.probeLate = 400 * time.Millisecond
		w.mu.Unlock()
		w.po.SetReachable(true)
		mark := w.opsMark()
		sleepUntil(giveUp.Add(time.Second))
		synctest.Wait()
		if why := w.k.RetiredWith(s); !errors.Is(why, errLost) {
			t.Fatalf("the session past its time: retired with %v; want it given up", why)
		}
		ok := slices.ContainsFunc(w.callsSince(giveUp), func(c call) bool { return c.op == "probe" && c.err == nil })
		if !ok {
			t.Fatal("no probe replied after the session was given up: the test shows nothing")
		}
		for _, op := range w.opsFrom(mark) {
			if op == "RenewSessionUp" || op == "InsertSession" {
				t.Fatalf("a renewal (%s) was sent after the session was given up: %v", op, w.opsFrom(mark))
			}
		}
	})
}

// TestSettleChecksGrace: an outage grace is zero, or positive up to
// queue.MaxGrace.
func TestSettleChecksGrace(t *testing.T) {
	for _, g := range []time.Duration{-time.Millisecond, queue.MaxGrace + time.Millisecond} {
		p := Params{TTL: worldTTL, Grace: g, Clock: testClock{}}
		if err := p.Settle(); err == nil {
			t.Errorf("Settle with grace %v succeeded", g)
		}
	}
	for _, g := range []time.Duration{0, worldGrace, queue.MaxGrace} {
		p := Params{TTL: worldTTL, Grace: g, Clock: testClock{}}
		if err := p.Settle(); err != nil {
			t.Errorf("Settle with grace %v: %v", g, err)
		}
	}
}

// TestSuspendedTwice: a session resumed after one outage, holding again
// (a hold of its resumed claim joined anew), is suspended at its next
// deadline in a second outage and resumed again, with the same claim.
func TestSuspendedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		for round := range 2 {
			d := w.suspendAtDeadline(s)
			if !w.suspendedNow(s) {
				t.Fatalf("round %d: the session is not suspended at its deadline (retired with %v)", round, w.k.RetiredWith(s))
			}
			sleepUntil(d.Add(2 * worldTTL))
			w.po.SetReachable(true)
			time.Sleep(quarter)
			synctest.Wait()
			if w.suspendedNow(s) || w.k.RetiredWith(s) != nil {
				t.Fatalf("round %d: suspended %v, retired with %v; want it resumed", round, w.suspendedNow(s), w.k.RetiredWith(s))
			}
			if end := w.end(h); end != "" {
				t.Fatalf("round %d: the resumed claim has ended (%s)", round, end)
			}
			// The program locks again: a hold of the same claim.
			s2, err := w.k.Enter(w.ctx)
			if err != nil || s2 != s {
				t.Fatalf("round %d: Enter = %v, %v; want the resumed session", round, s2, err)
			}
			h = &claimHold{ref: h.ref}
			if !w.k.Join(h, s) {
				t.Fatalf("round %d: a hold of the resumed claim did not join", round)
			}
		}
	})
}

// TestCloseWhileSuspended: Close retires a suspended session, gives its
// verdict, and marks its claims dead.
func TestCloseWhileSuspended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		h, s := w.hold("k")
		w.suspendAtDeadline(s)
		w.po.SetReachable(true) // the next probe is a quarter interval away
		closed := errors.New("closed")
		w.k.Close(closed)
		w.wait()
		if err := w.k.AwaitVerdict(w.ctx, s); !errors.Is(err, closed) {
			t.Fatalf("AwaitVerdict after Close = %v; want Close's reason", err)
		}
		if end := w.end(h); end != queue.KindDead {
			t.Fatalf("the claim of the session closed while suspended ended with %q; want %q", end, queue.KindDead)
		}
	})
}

// TestSuspendedThroughAHang: the store stops answering (requests held,
// landing when it answers again) for three TTLs: the renewal in flight at
// the deadline holds up the first probe until it is cut off, probes that
// hang are cut off in turn, and once the store answers again the Keeper
// resumes the session within a TTL, with the same claim.
func TestSuspendedThroughAHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		w.po.SetAnswering(false)
		d := w.k.Deadline(s)
		sleepUntil(d)
		synctest.Wait()
		if !w.suspendedNow(s) {
			t.Fatalf("the session is not suspended at its deadline in a hang (retired with %v)", w.k.RetiredWith(s))
		}
		back := d.Add(3 * worldTTL)
		sleepUntil(back)
		w.po.SetAnswering(true)
		sleepUntil(back.Add(worldTTL))
		synctest.Wait()
		if w.suspendedNow(s) || w.k.RetiredWith(s) != nil {
			t.Fatalf("a TTL after the hang: suspended %v, retired with %v; want it resumed", w.suspendedNow(s), w.k.RetiredWith(s))
		}
		if end := w.end(h); end != "" {
			t.Fatalf("the resumed claim has ended (%s)", end)
		}
	})
}

// TestIdleSessionRetiredAtDeadline: a session with nothing to keep (its
// last hold removed, the Keeper's loop stopped), judged over past its
// deadline by a late call (an Unlock of a hold lost before), is retired,
// not suspended, and the next Enter opens a new session at once. Suspended
// (without idleLocked), no loop probes for its verdict and Enter waits
// until the Keeper gives up, the grace and a TTL after the deadline.
func TestIdleSessionRetiredAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		w.k.Remove(h)
		synctest.Wait() // the loop stops: the session is idle
		sleepUntil(w.k.Deadline(s).Add(worldTTL / 10))
		w.k.ExpireIfDue(s)
		if w.suspendedNow(s) || w.k.RetiredWith(s) == nil {
			t.Fatalf("the idle session past its deadline: suspended %v, retired with %v; want it retired", w.suspendedNow(s), w.k.RetiredWith(s))
		}
		from := time.Now()
		s2, err := w.k.Enter(w.ctx)
		if err != nil || s2 == s {
			t.Fatalf("Enter after the idle session's deadline = %v, %v; want a new session", s2, err)
		}
		if took := time.Since(from); took >= worldTTL {
			t.Fatalf("Enter took %v after the idle session's deadline; want a new session within a TTL (%v)", took, worldTTL)
		}
		w.k.Leave(s2)
	})
}
