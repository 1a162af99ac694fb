package integration

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
)

// The delay-requests fault: a holder's requests stall on the network for
// a moment, its driver gives up on them and closes their connections,
// its later requests on new connections succeed, and then the stalled
// ones reach the server after all, seconds late: TCP delivers what it
// held back once the path clears, and the server cannot tell a request
// its sender abandoned from a fresh one. The stall begins with a renewal
// of the holder's session (an update of its document in the sessions
// collection, raising expiresAt with $max), which the holder counted as
// failed; delivered late, it is applied after the renewals that followed
// it. The protocol must make that harmless: a session's expiry only
// grows, so the late renewal changes nothing when its later renewals
// landed first, and a session judged dead stays dead (its claims carry a
// dead marker) whatever a late renewal does to its expiry afterwards.
//
// The driver gives up on a request only when its heartbeat fails twice
// (the monitor retries a timed-out check once, on a new connection,
// before it clears the pool and closes the connections in use): the
// workers it is injected into use connectTimeoutMS=200, which is also the
// heartbeat timeout, and a heartbeat every 500 ms, the driver's minimum.
// So the stall lasts 0.85–1.1 s: a heartbeat falls into it, and so does
// the immediate retry 200 ms later. It begins when the proxy reads the
// holder's next session renewal (faultproxy.StallNext, matching
// isRenewal), so that renewal is in flight when the driver gives up (a
// request issued after the first failed check waits for server selection
// instead, and is sent only once the stall is over).
//
// That takes a TTL of a few seconds: the holder must outlive the stall
// and the driver's recovery (up to another heartbeat interval) on the
// renewal before the stalled one, TTL − TTL/20 − TTL/3 ≈ 0.6 TTL. With
// delayTTL = 3 s that is 1.85 s. The held requests are delivered 0.8–1.2
// TTL after they were sent: after the later renewals succeeded, while the
// hold is still valid, and around the moment the stalled renewal's own
// expiry runs out.
const (
	delayTTL             = 3 * time.Second
	giveUpConnectTimeout = 200 * time.Millisecond
)

// delayRequestsConfig makes cfg a worker the delay-requests fault can be
// injected into: a TTL of delayTTL, holds long enough to outlast the
// fault (the test ends them when it is over), and a driver that gives up.
func delayRequestsConfig(cfg *worker.Config) {
	cfg.TTL = delayTTL
	cfg.HoldFor = 6 * delayTTL
	cfg.ConnectTimeout = giveUpConnectTimeout
}

// renewLead is how long before the holder's next renewal is due the
// stall is armed.
const renewLead = 100 * time.Millisecond

// sessionsSuffix names where dsync/mongo keeps the sessions of a lock
// collection: "dsync_locks_sessions" for the workers' locks,
// "dsync_elections_sessions" for their elections' leases. A renewal is a
// findAndModify of one of its documents by _id (a server-time sample is
// one of its "#clock" document); opening a session is an insert there, and
// so is a renewal after one whose outcome was unknown; claims and end
// markers are inserts into the lock collection, wake-up events inserts
// into "<collection>_events".
const sessionsSuffix = "_sessions"

// isRenewal reports whether c is a session renewal's findAndModify.
func isRenewal(c faultproxy.Command) bool {
	return c.Name == "findAndModify" && c.ID != "#clock" && strings.HasSuffix(c.Collection, sessionsSuffix)
}

// isLateRenewal reports whether w is a session renewal's findAndModify.
func isLateRenewal(w faultproxy.LateWrite) bool {
	return isRenewal(faultproxy.Command{Name: w.Command, Collection: w.Collection, ID: w.ID})
}

// delayRequests injects the delay-requests fault into the hold that acq
// (an acquire event of p) began, and returns once the held requests have
// been delivered and whatever they caused has played out, having ended
// the hold if it was still on. p must reach the server through its proxy
// with a driver that gives up (delayRequestsConfig). It returns false,
// without injecting anything, if the hold ended before the fault could
// begin.
func (c *cluster) delayRequests(p *proc, acq history.Event) bool {
	c.t.Helper()
	px := c.proxies[p.name]
	if px == nil {
		c.t.Fatalf("delay-requests: %s has no proxy", p.name)
	}
	ttl, interval := p.cfg.TTL, p.cfg.Renew
	if interval == 0 {
		interval = ttl / 3
	}
	key := acq.Key
	ofHold := func(ev history.Event) bool { return ev.PID == acq.PID && ev.Key == key && ev.Token == acq.Token }

	// The keeper renews the session an interval after the send time of
	// its last confirmed renewal (or of its opening: the session may be
	// older than the hold), which the hold's latest deadline tells:
	// deadline − (TTL − TTL/20). The stall is armed shortly before that
	// renewal is due, and begins when the proxy reads it.
	dl := max(acq.DL, c.deadlineOf(acq.PID, acq.Token))
	for {
		if c.ended(acq.PID, acq.Token) {
			return false
		}
		due := dl - int64(ttl-ttl/20) + int64(interval)
		if wait := time.Duration(due - int64(renewLead) - history.Now()); wait > 10*time.Millisecond {
			time.Sleep(wait)
			break
		}
		// Due now or past: wait for that renewal to be confirmed.
		ev, _, ok := c.log.await(0, interval+5*time.Second, func(ev history.Event) bool {
			return ofHold(ev) && ev.Ev == history.EvDeadline && ev.DL > dl
		})
		if !ok {
			return false // the hold ended, or renews no more
		}
		dl = ev.DL
	}
	if c.ended(acq.PID, acq.Token) {
		return false
	}

	stall := randDuration(850*time.Millisecond, 1100*time.Millisecond)
	delay := randDuration(ttl*4/5, ttl*6/5)
	n0 := len(px.LateWrites())
	began, disarm := px.StallNext(isRenewal, stall, delay)
	var at time.Time
	select {
	case at = <-began:
	case <-time.After(renewLead + interval + 2*time.Second):
		disarm()
		select {
		case at = <-began:
		default:
			c.t.Logf("delay-requests: %s sent no renewal while holding token %d (the hold ended?); not injected", p.name, acq.Token)
			return false
		}
	}
	t0 := history.Mono(at)
	t1 := t0 + int64(stall)
	landed := t1 + int64(delay)
	// Wait for the held requests to land and for the stalled renewal's
	// expiry to run out, then for a renewal interval more: a waiter may
	// take over in between, and the holder's next renewal tells it
	// whether its session is still alive.
	settled := max(landed, t0+int64(ttl)) + int64(interval+200*time.Millisecond)
	time.Sleep(time.Duration(settled - history.Now()))
	c.fault("delay-requests", p, t0, landed)
	lw := px.LateWrites()[n0:]
	endedByTest := false
	if !c.ended(acq.PID, acq.Token) {
		_ = p.cmd.Process.Signal(syscall.SIGUSR2)
		endedByTest = true
	}

	// What happened, for the log: times are from when the first late
	// write reached the server.
	applied := 0 // late renewals applied
	var writes []string
	arrived := landed
	for i, w := range lw {
		if i == 0 {
			arrived = history.Mono(w.Delivered)
		}
		s := fmt.Sprintf("%s %s held %v, %v after its client closed: ",
			w.Command, w.Collection, w.Delivered.Sub(w.Read).Round(time.Millisecond), w.Delivered.Sub(w.ClientClosed).Round(time.Millisecond))
		switch {
		case w.Applied():
			if isLateRenewal(w) {
				applied++
			}
			s += fmt.Sprintf("applied, n=%d", w.N)
			if w.Command == "update" {
				s += fmt.Sprintf(" nModified=%d", w.Modified)
			}
		case w.Replied:
			s += fmt.Sprintf("not applied (ok=%v n=%d)", w.OK, w.N)
		default:
			s += "no reply seen"
		}
		writes = append(writes, s)
	}
	c.delayInjected++
	c.delayLateApplied += applied
	renewed := 0
	var lost, taken *history.Event
	c.log.each(func(ev history.Event) {
		switch {
		case ofHold(ev) && ev.Ev == history.EvDeadline && ev.T > t1 && ev.T < arrived:
			renewed++
		case ofHold(ev) && ev.Ev == history.EvLost && lost == nil:
			lost = &ev
		case ev.Ev == history.EvAcquire && ev.Key == key && ev.Token > acq.Token && taken == nil:
			taken = &ev
		}
	})
	outcome := "the hold went on until the test ended it"
	if !endedByTest {
		outcome = "the hold ended"
	}
	if lost != nil {
		outcome = fmt.Sprintf("the holder saw its loss %v after, its deadline then %v ahead", ms(lost.T-arrived), ms(lost.DL-lost.T))
	}
	if taken != nil {
		outcome += fmt.Sprintf("; %s took over with token %d %v after", taken.Worker, taken.Token, ms(taken.T-arrived))
	}
	c.t.Logf("delay-requests on %s (token %d): stall %v, requests held %v; %d renewals confirmed after the stall, then %d late writes [%s]; %s",
		p.name, acq.Token, stall.Round(time.Millisecond), delay.Round(time.Millisecond), renewed, len(lw), strings.Join(writes, "; "), outcome)
	return true
}

// delayRequestsGuest injects the delay-requests fault where the cluster's
// own workers' TTL is too short for it (a holder cannot outlive the
// driver's recovery): a guest worker with delayTTL, behind a proxy of its
// own, joins the competition for one hold, the fault is injected into
// that hold, and the guest leaves. like, if set, lends it its wall clock.
// A guest whose hold ended before the fault could begin (on a starved
// machine a renewal may come too late) is followed by another, up to
// guestTries in all: the fault must be injected once.
func (c *cluster) delayRequestsGuest(like *proc) {
	c.t.Helper()
	for try := 1; try <= guestTries; try++ {
		if c.delayRequestsGuestOnce(fmt.Sprintf("dr%d", try), like) {
			return
		}
		c.t.Logf("delay-requests: guest %d of %d lost its hold before the fault began", try, guestTries)
	}
	c.t.Errorf("delay-requests: each of %d guests' holds ended before the fault began", guestTries)
}

// guestTries is how many guests delayRequestsGuest starts at most.
const guestTries = 3

// delayRequestsGuestOnce runs one guest named name through its one hold,
// injecting the fault into it, and reports whether the fault was
// injected.
func (c *cluster) delayRequestsGuestOnce(name string, like *proc) bool {
	c.t.Helper()
	mark := c.log.mark()
	g := c.start(name, func(cfg *worker.Config) {
		delayRequestsConfig(cfg)
		cfg.Holds = 1
		if like != nil {
			cfg.WallOffset, cfg.JumpStep = like.cfg.WallOffset, like.cfg.JumpStep
		}
	})
	started := history.Now()
	acq, _ := c.await(mark, 60*time.Second, "the delay-requests guest's hold", func(ev history.Event) bool {
		return ev.Ev == history.EvAcquire && ev.PID == g.pid
	})
	c.t.Logf("delay-requests: guest %s joined, and held the lock %v later", g.name, ms(acq.T-started))
	injected := c.delayRequests(g, acq)
	// The guest leaves after its one hold.
	select {
	case <-g.exited:
		if g.waitErr != nil {
			c.t.Errorf("guest %s (pid %d) exited: %v\n%s", g.name, g.pid, g.waitErr, g.stderr)
		}
	case <-time.After(10*time.Second + 2*delayTTL):
		c.t.Errorf("guest %s (pid %d) did not leave after its hold; killing it", g.name, g.pid)
		g.kill()
	}
	c.retire(g)
	return injected
}

// retire forgets a worker that has exited for good, so that faults are no
// longer injected into it.
func (c *cluster) retire(p *proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[p.name] == p {
		delete(c.procs, p.name)
	}
}

// lateWrites tallies the write commands the cluster's proxies delivered
// after their sender gave up, and fails the test if delay-requests was
// injected and no session renewal among them was applied: the fault
// would have lost its teeth. (Other late writes do not count for that:
// a late wake-up event or end marker is applied too, but says nothing
// about renewals.)
func (c *cluster) lateWrites() {
	c.t.Helper()
	late, applied, renewals := 0, 0, 0
	for _, px := range c.proxies {
		for _, w := range px.LateWrites() {
			late++
			if w.Applied() {
				applied++
				if isLateRenewal(w) {
					renewals++
				}
			}
		}
	}
	summary.addLateWrites(late, applied, renewals)
	if late > 0 || c.delayInjected > 0 {
		c.t.Logf("late writes: %d delivered after their sender gave up, %d of them applied, %d of those session renewals (%d under delay-requests, injected %d times)",
			late, applied, renewals, c.delayLateApplied, c.delayInjected)
	}
	if c.delayInjected > 0 && c.delayLateApplied == 0 {
		c.t.Errorf("delay-requests injected %d times, but the server applied no session renewal delivered after its sender gave up", c.delayInjected)
	}
}
