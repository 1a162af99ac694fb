package integration

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// outageGrace is the workers' outage grace (dsync.ClientWithOutageGrace)
// in the tests of outages ridden through: far above every outage they
// inject (at most a few TTLs, and a restart), so that each is one the
// holds must survive, and MongoDB's election figures' default (30 s).
const outageGrace = 30 * time.Second

// retakeBound is how long after the store's return a hold lost to the
// outage must be held again: the Keeper probes, renews and checks the
// store's record of up-time (a few round trips), then the worker's
// LockContext returns; on a loaded machine (a server that answered no
// renewal within the 1.2 s a 2 s TTL leaves it, for minutes, at load
// averages above 20) many TTLs more. It only keeps a failed take-back
// from hanging the test: what the tests assert is who holds again, with
// which token, and the times are logged.
const retakeBound = 2 * time.Minute

// riding makes cfg a worker that rides outages through: an outage grace,
// and a hold lost to a suspension taken back (Config.Relock).
func riding(cfg worker.Config) worker.Config {
	cfg.Grace, cfg.Relock = outageGrace, true
	return cfg
}

// storeOutage cuts the store off from every client at once for about d,
// the way kind says: "outage" stops the server (SIGSTOP, Process.Pause:
// requests wait, and land late on the return), "restart" kills it and
// restarts it on the same data and port (connections refused, then
// dropped). during, if not nil, is called once the store is cut off
// (within d). It records the fault, and returns when it began and when
// the store was back.
func (c *cluster) storeOutage(srv *mongotest.Process, kind string, d time.Duration, during func()) (t0, t1 int64) {
	c.t.Helper()
	c.awaitSetupExpired()
	t0 = history.Now()
	cut, back := srv.Pause, srv.Resume
	switch kind {
	case "outage":
	case "restart":
		cut, back = srv.Kill, srv.Restart
	default:
		c.t.Fatalf("unknown store outage %q", kind)
	}
	cut()
	if during != nil {
		during()
	}
	time.Sleep(d - time.Duration(history.Now()-t0))
	back()
	t1 = history.Now()
	c.fault(kind, nil, t0, t1)
	return t0, t1
}

// endHold ends the hold that ev began (the worker ends its hold on a
// SIGUSR2), and waits until its worker has released it. A signal that
// lands before the worker's work under a hold taken back begins is not
// seen by that work, so it signals again each second; it gives up, with a
// note in the log, after retakeBound (a hold that is not there, after a
// take-back that failed).
func (c *cluster) endHold(ev history.Event) {
	c.t.Helper()
	p := c.procOf(ev)
	if p == nil {
		return
	}
	since := history.Now()
	released := func(e history.Event) bool {
		return e.Ev == history.EvReleased && e.PID == ev.PID && e.Token == ev.Token && e.T >= since
	}
	for deadline := time.Now().Add(retakeBound); time.Now().Before(deadline); {
		_ = p.cmd.Process.Signal(syscall.SIGUSR2)
		if _, _, ok := c.log.await(0, time.Second, released); ok {
			return
		}
	}
	c.t.Logf("%s (pid %d) did not release token %d within %v of being asked to", ev.Worker, ev.PID, ev.Token, retakeBound)
}

// awaitRetaken checks, for each key of before (the holds in force when an
// outage from t0 to t1 began, which outlasted their deadlines), that the
// key's first hold begun after t0 is the same process's, with the same
// token: the hold taken back, nobody else's between (retaken). It
// returns the time from the store's return to each key's hold taken
// back.
func (c *cluster) awaitRetaken(before map[string]history.Event, t0, t1 int64) []time.Duration {
	c.t.Helper()
	back, missed := c.retaken(before, t0, t1)
	for _, m := range missed {
		c.t.Error(m)
	}
	return back
}

// retaken waits up to retakeBound for each key of before to be held
// again after the outage from t0 to t1, and returns the time from the
// store's return to each, and what went otherwise: a key held first by
// another process or with another token, or not held again.
func (c *cluster) retaken(before map[string]history.Event, t0, t1 int64) (back []time.Duration, missed []string) {
	deadline := time.Now().Add(retakeBound)
	for key, h := range before {
		nx, _, ok := c.log.await(0, max(0, time.Until(deadline)), func(e history.Event) bool {
			return e.Ev == history.EvAcquire && e.Key == key && e.T > t0
		})
		switch {
		case !ok:
			missed = append(missed, fmt.Sprintf("%s: not held again within %v of the store's return (held by %s, token %d, before the outage)",
				key, retakeBound, h.Worker, h.Token))
			continue
		case nx.PID != h.PID || nx.Token != h.Token:
			missed = append(missed, fmt.Sprintf("%s: held by %s (pid %d) with token %d after the outage of %v, by %s (pid %d) with token %d before it: the hold was not taken back",
				key, nx.Worker, nx.PID, nx.Token, ms(t1-t0), h.Worker, h.PID, h.Token))
		}
		back = append(back, time.Duration(max(0, nx.T-t1)))
	}
	slices.Sort(missed)
	return back, missed
}

// stalledAfter returns the longest time any worker spent stalled (not
// scheduled at all: history.EvStall) in the TTL after t.
func (c *cluster) stalledAfter(t int64) time.Duration {
	end := t + int64(c.base.TTL)
	stalled := make(map[int]int64)
	c.log.each(func(ev history.Event) {
		if ev.Ev == history.EvStall {
			if lo, hi := max(ev.T, t), min(ev.End, end); lo < hi {
				stalled[ev.PID] += hi - lo
			}
		}
	})
	var worst int64
	for _, d := range stalled {
		worst = max(worst, d)
	}
	return time.Duration(worst)
}

// awaitSetupExpired waits until no session of precreate's Clients can
// keep a hold from riding an outage through. Their session documents stay
// in the store until they expire, and carry no record of up-time (those
// Clients have no outage grace, and close before their first renewal):
// a suspended session's check reads such a document, live in the
// outage's window, as a process that may judge holds by their expiry
// alone, and does not resume (dsync/internal/queue, doc_outage.go). The
// window of a hold begins at most an interval and half a TTL before the
// outage (its last confirmed renewal, less the break threshold): an
// outage that begins a precreate TTL and a workers' TTL after the
// Clients closed is clear of them.
func (c *cluster) awaitSetupExpired() {
	time.Sleep(time.Until(c.prepared.Add(precreateTTL + c.base.TTL)))
}

// Fault 7: an outage of the whole store (the server SIGSTOPped) for
// longer than the TTL and shorter than the workers' grace, while one of
// three workers holds the lock and the others wait, on the store's
// record of up-time (each worker with an outage grace). The holder's
// Lost() closes at its deadline, as in every fault; it locks again
// without Unlock, and must hold again with the same token, nobody else
// holding in between; the history shows it as a resume (history.Check),
// and is clean. With DSYNC_LONG=1 the outages alternate with a server
// killed and restarted on its data (as TestServerRestart's).
//
// One outage in the short form; four with DSYNC_LONG=1.
func TestOutageRelock(t *testing.T) {
	t.Parallel()
	outages := 1
	switch {
	case soak():
		outages = 40
	case longtest.Enabled():
		outages = 4
	}
	rideOutages(t, []string{"outage", "restart"}, outages)
}

// rideOutages runs n outages of the store, of kinds in turn, each of 1.5
// to 2 TTLs, on three workers with an outage grace that lock again on
// Lost() (riding): each outage begins while one holds the lock, which
// it must hold again with the same token after the store's return
// (awaitRetaken). The history must be clean, with resumes in it.
func rideOutages(t *testing.T, kinds []string, n int) {
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := riding(baseConfig())
	// A hold lasts until the test ends it (endHold): one whose work ended
	// in the outage, before its deadline, would be released there, not
	// lost, and its waiter would rightly take the key on the return (one
	// run in CI drew a 9 s hold begun before the setup had expired).
	cfg.HoldFor = time.Hour
	c := newCluster(t, srv.URI(), db, cfg)
	c.startN(3, nil)
	c.awaitSetupExpired()
	var tok uint64
	from := 0
	var back []time.Duration
	for done := 0; done < n; {
		ev, next := c.await(from, 60*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		time.Sleep(randDuration(0, ttl/2))
		if c.ended(ev.PID, ev.Token) {
			continue // the hold is over: wait for the next
		}
		kind := kinds[done%len(kinds)]
		t0, t1 := c.storeOutage(srv, kind, randDuration(ttl*3/2, 2*ttl), nil)
		b := c.awaitRetaken(map[string]history.Event{c.lockKey(): ev}, t0, t1)
		back = append(back, b...)
		t.Logf("%s of %v while %s held token %d: held again %v after the store's return", kind, ms(t1-t0), ev.Worker, ev.Token, b)
		done++
		if done < n {
			c.endHold(ev) // the next outage is the next holder's
		}
	}
	r := c.check()
	if r.Resumes == 0 {
		t.Errorf("no resume in the history")
	}
	t.Logf("%d outages ridden through at TTL %v: store back → held again %s", len(back), ttl, fmtQuantiles(back))
}
