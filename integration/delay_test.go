package integration

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
)

// The delay-requests fault: a holder's requests stall on the network for
// a moment, its driver gives up on them and closes their connections,
// its later requests on new connections succeed, and then the stalled
// ones reach the server after all, seconds late: TCP delivers what it
// held back once the path clears, and the server cannot tell a request
// its sender abandoned from a fresh one. A renewal delivered that way
// sets the lease's expiry back to what it was when it was sent, below
// what the later renewals set.
//
// The driver gives up on a request only when its heartbeat fails twice
// (the monitor retries a timed-out check once, on a new connection,
// before it clears the pool and closes the connections in use): the
// workers it is injected into use connectTimeoutMS=200, which is also the
// heartbeat timeout, and a heartbeat every 500 ms, the driver's minimum.
// So the stall lasts 0.85–1.1 s: a heartbeat falls into it, and so does
// the immediate retry 200 ms later. It begins when the proxy reads the
// holder's next renewal (faultproxy.StallNextWrite), so that renewal is
// in flight when the driver gives up (a request issued after the first
// failed check waits for server selection instead, and is sent only once
// the stall is over).
//
// That takes a TTL of a few seconds: the holder must outlive the stall
// and the driver's recovery (up to another heartbeat interval) on the
// renewal before the stalled one, TTL − TTL/20 − TTL/3 ≈ 0.6 TTL. With
// delayTTL = 3 s that is 1.85 s. The held requests are delivered 0.8–1.2
// TTL after they were sent: after the later renewals succeeded, while the
// hold is still valid, and around the moment the stalled renewal's own
// expiry runs out. Delivered after it, the renewal sets an expiry that
// has already passed; delivered before, it sets one the holder's next
// renewal may or may not be in time to raise again. Either way the
// holder's local deadline is further out than the expiry the server now
// has, and a waiter may take over while it still holds.
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

	// The keeper renews an interval after the hold began, then an
	// interval after each renewal returned (EvDeadline's T is its reply).
	// The stall is armed shortly before the next renewal is due, and
	// begins when the proxy reads it (or whatever write comes first).
	last := acq.T
	for {
		if c.ended(acq.PID, acq.Token) {
			return false
		}
		start := last + int64(interval-renewLead)
		if wait := time.Duration(start - history.Now()); wait > 10*time.Millisecond {
			time.Sleep(wait)
			break
		}
		ev, _, ok := c.log.await(0, interval+5*time.Second, func(ev history.Event) bool {
			return ofHold(ev) && ev.Ev == history.EvDeadline && ev.T > last
		})
		if !ok {
			return false // the hold ended, or renews no more
		}
		last = ev.T
	}
	if c.ended(acq.PID, acq.Token) {
		return false
	}

	stall := randDuration(850*time.Millisecond, 1100*time.Millisecond)
	delay := randDuration(ttl*4/5, ttl*6/5)
	n0 := len(px.LateWrites())
	began, disarm := px.StallNextWrite(stall, delay)
	var at time.Time
	select {
	case at = <-began:
	case <-time.After(renewLead + interval + 2*time.Second):
		disarm()
		select {
		case at = <-began:
		default:
			c.t.Logf("delay-requests: %s sent no write while holding token %d (the hold ended?); not injected", p.name, acq.Token)
			return false
		}
	}
	t0 := history.Mono(at)
	t1 := t0 + int64(stall)
	landed := t1 + int64(delay)
	// Wait for the held requests to land and for the stalled renewal's
	// expiry to run out, then for a renewal interval more: a waiter may
	// take over in between, and the holder's next renewal tells it
	// whether its lease was cut short.
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
	applied := 0
	var writes []string
	arrived := landed
	for i, w := range lw {
		if i == 0 {
			arrived = history.Mono(w.Delivered)
		}
		s := fmt.Sprintf("%s held %v, %v after its client closed: ",
			w.Command, w.Delivered.Sub(w.Read).Round(time.Millisecond), w.Delivered.Sub(w.ClientClosed).Round(time.Millisecond))
		switch {
		case w.Applied():
			applied++
			s += fmt.Sprintf("applied, n=%d", w.N)
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
func (c *cluster) delayRequestsGuest(like *proc) {
	c.t.Helper()
	mark := c.log.mark()
	g := c.start("dr", func(cfg *worker.Config) {
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
	if !c.delayRequests(g, acq) {
		c.t.Errorf("delay-requests: the guest's hold (token %d) ended before the fault began", acq.Token)
	}
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
// injected and none of them was applied: the fault would have lost its
// teeth.
func (c *cluster) lateWrites() {
	c.t.Helper()
	late, applied := 0, 0
	for _, px := range c.proxies {
		for _, w := range px.LateWrites() {
			late++
			if w.Applied() {
				applied++
			}
		}
	}
	summary.addLateWrites(late, applied)
	if late > 0 || c.delayInjected > 0 {
		c.t.Logf("late writes: %d delivered after their sender gave up, %d of them applied (%d under delay-requests, injected %d times)",
			late, applied, c.delayLateApplied, c.delayInjected)
	}
	if c.delayInjected > 0 && c.delayLateApplied == 0 {
		c.t.Errorf("delay-requests injected %d times, but the server applied no write delivered after its sender gave up", c.delayInjected)
	}
}
