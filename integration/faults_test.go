package integration

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// soak reports whether the long run was asked for (DSYNC_SOAK=1).
func soak() bool {
	ok, _ := strconv.ParseBool(os.Getenv("DSYNC_SOAK"))
	return ok
}

// rounds is how many times a test injects its fault: def when the long
// forms of the tests were asked for (DSYNC_LONG=1, as CI runs them), long
// in the soak run, and a quarter of def (at least one) otherwise: the
// README's command runs every test once, on a budget of minutes, and the
// fault suites are its longest part. A test that cycles through fault
// kinds (see [kindsFrom]) meets a quarter of its kinds in the short form,
// from a random one on, and every kind in the long one.
func rounds(def, long int) int {
	switch {
	case soak():
		return long
	case longtest.Enabled():
		return def
	}
	return max(1, def/4)
}

// kindsFrom returns the fault kinds a test cycles through in the order it
// meets them: as given in the long forms, and from a random one on in the
// short form (logged), so that short runs over time meet every kind, not
// always the first few.
func kindsFrom(t *testing.T, kinds []string) []string {
	if soak() || longtest.Enabled() {
		return kinds
	}
	i := rand.IntN(len(kinds))
	t.Logf("short form: fault kinds from %q on (DSYNC_LONG=1 runs every kind)", kinds[i])
	return append(slices.Clone(kinds[i:]), kinds[:i]...)
}

// casesFor returns the cases of a test that runs them one after another:
// every one in the long forms, and one drawn at random in the short form
// (logged), so that the README's command stays short and short runs over
// time meet every case.
func casesFor(t *testing.T, cases ...string) []string {
	if soak() || longtest.Enabled() {
		return cases
	}
	c := cases[rand.IntN(len(cases))]
	t.Logf("short form: case %q of %q (DSYNC_LONG=1 runs every case)", c, cases)
	return []string{c}
}

// kindsButGuest is kindsFrom of every fault kind but delay-requests,
// which needs a guest worker that holds the workers' one lock key.
func kindsButGuest(t *testing.T) []string {
	return kindsFrom(t, slices.DeleteFunc(slices.Clone(faultKinds), func(k string) bool { return k == "delay-requests" }))
}

// faultRounds injects the fault kinds in turn, a round each (as many as
// rounds gives): into the process of the next event isAfter(0) matches,
// up to within after that event, then waits for an event isAfter matches
// after the fault ended; and at the end for tail more, so that the last
// fault's effects are in the history. Events named what are awaited for
// up to a minute each. It returns the faults injected, by kind.
func (c *cluster) faultRounds(srv *mongotest.Process, kinds []string, what string, isAfter func(t0 int64) func(history.Event) bool, within time.Duration, tail int) map[string]int {
	c.t.Helper()
	from, counts := 0, make(map[string]int)
	for n := 0; n < rounds(len(kinds), 10*len(kinds)); n++ {
		ev, next := c.await(from, 60*time.Second, what, isAfter(0))
		from = next
		p := c.procOf(ev)
		if p == nil {
			continue
		}
		kind := kinds[n%len(kinds)]
		counts[kind]++
		time.Sleep(randDuration(0, within))
		c.inject(kind, p, srv)
		_, from = c.await(from, 60*time.Second, what+" after "+kind, isAfter(history.Now()))
	}
	for range tail {
		_, from = c.await(from, 60*time.Second, what, isAfter(0))
	}
	return counts
}

// ttl is the workers' TTL: at 1 s, beside CPU burners at four per core,
// the embedded server's replies outlasted it (sessions could not even be
// opened for 30 s), and its margin (TTL/20) was shorter than the
// scheduling delays of a loss signal's path.
const ttl = 3 * time.Second

// baseConfig is the workload of most tests: a 3 s TTL, holds of about
// 300 ms with one increment of the fenced register each.
func baseConfig() worker.Config {
	return worker.Config{
		TTL:      ttl,
		Poll:     20 * time.Millisecond,
		HoldFor:  300 * time.Millisecond,
		Gap:      40 * time.Millisecond, // longer than Poll: others get a turn
		Work:     10 * time.Millisecond,
		Register: worker.RegFenced,
	}
}

// takeoverBound is how long after a dead holder's deadline another worker
// must have taken over: generous for a loaded machine, and far below the
// 60 s period of MongoDB's TTL monitor, so a takeover that waited on a TTL
// index would fail it.
const takeoverBound = 10 * time.Second

// killHolder SIGKILLs p, the process of hold ev, and returns the hold's
// last recorded deadline and whether the hold was still in force when the
// SIGKILL landed. Once p is gone, every event it echoed is in the log: an
// end of the hold (or its loss) there means that the worker had stopped
// relying on it before it died, and may have released it, so that the
// next holder could rightly take over before its deadline. The test sees
// events late and may itself run late on a loaded machine, so a hold it
// saw in force may have ended by the time the signal lands (a takeover
// 367 ms before the deadline, once in CI). A worker records the end before
// it calls Unlock: a hold with no end recorded was never released.
func (c *cluster) killHolder(p *proc, ev history.Event) (dl int64, held bool) {
	c.kill(p)
	return c.deadlineOf(ev.PID, ev.Token), !c.ended(ev.PID, ev.Token)
}

// checkTakeover checks the takeover nx of a killed holder's hold ev,
// whose last recorded deadline was dl. The deadline is TTL − TTL/20 after
// the send time of the holder's last confirmed renewal (when it read the
// server's time for the expiry it sent), and the server lets anyone take
// over only once the lease has expired in its time, i.e. a full TTL after
// that send at the earliest: so never before
// dl + TTL/20 (less 2 ms for clock drift and conversion), and, since no
// TTL index is involved, well within takeoverBound.
func checkTakeover(t *testing.T, p *proc, ev, nx history.Event, dl int64) {
	t.Helper()
	margin := int64(p.cfg.TTL / 20)
	switch {
	case nx.T < dl+margin-int64(2*time.Millisecond):
		t.Errorf("%s took over (token %d) %v after the killed holder's deadline: before its TTL had run out (margin %v)",
			nx.Worker, nx.Token, ms(nx.T-dl), time.Duration(margin))
	case time.Duration(nx.T-dl) > takeoverBound:
		t.Errorf("%s took over %v after the killed holder's deadline", nx.Worker, ms(nx.T-dl))
	default:
		t.Logf("killed %s holding token %d; %s took over with token %d, %v after its deadline (TTL ran out %v after it)",
			p.name, ev.Token, nx.Worker, nx.Token, ms(nx.T-dl), time.Duration(margin))
	}
}

// Without faults, the workers hand the lock over many times and the
// history is clean: the baseline every fault test departs from. It
// watches its rounds' holds, and more until one worker's hold follows
// another's (up to maxSolo more): on a busy machine the workers start
// seconds apart, and the first may hold alone for the rounds of the
// short form.
func TestNoFaults(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t, baseConfig())
	c.startN(3, nil)
	var tok uint64
	from, prev, handedOver := 0, "", false
	const maxSolo = 100
	for i := 0; i < rounds(10, 200) || !handedOver && i < rounds(10, 200)+maxSolo; i++ {
		ev, next := c.await(from, 30*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		handedOver = handedOver || prev != "" && ev.Worker != prev
		prev = ev.Worker
	}
	r := c.check()
	if r.Handoffs == 0 {
		t.Errorf("no handoff between workers in %d holds", r.NumHolds)
	}
}

// Fault 1: the holder is SIGKILLed mid-hold. Another worker takes over
// after the dead holder's deadline (never before) and within
// takeoverBound of it, with a larger token.
func TestSIGKILLHolder(t *testing.T) {
	c := sharedCluster(t, baseConfig())
	c.startN(3, nil)
	var tok uint64
	from := 0
	n := rounds(4, 40)
	// A round whose SIGKILL landed after the holder had ended its hold
	// tests nothing (killHolder): it is played again, up to this many
	// times in all.
	missed, maxMissed := 0, 3*n
	for round := 0; round < n; {
		ev, next := c.await(from, 30*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		p := c.procOf(ev)
		if p == nil {
			continue
		}
		time.Sleep(randDuration(0, c.base.HoldFor/2))
		if c.ended(ev.PID, ev.Token) {
			continue // too late: try the next hold
		}
		dl, held := c.killHolder(p, ev)
		nx, next := c.await(from, ttl+takeoverBound, "takeover", isAcquire(ev.Token, ev.PID))
		from, tok = next, nx.Token
		c.start(p.name, nil)
		if !held {
			missed++
			if missed > maxMissed {
				t.Fatalf("the SIGKILL came after the holder had ended its hold in %d rounds: the machine is too slow for this test", missed)
			}
			t.Logf("killed %s after it had ended its hold (token %d); %s took over with token %d, %v after its deadline: the round is played again",
				p.name, ev.Token, nx.Worker, nx.Token, ms(nx.T-dl))
			continue
		}
		checkTakeover(t, p, ev, nx, dl)
		round++
	}
	c.check()
}

// checkUndisturbed checks that the hold under which w was written, which
// has ended, did not lose its lease early: a renewal refused before its deadline is what
// an old holder's late renewal or release would cause if it disturbed the
// new holder. A loss at the deadline (its process stalled on a loaded
// host) is only logged.
func (c *cluster) checkUndisturbed(t *testing.T, w history.Event) {
	t.Helper()
	lost, _, ok := c.log.await(0, 0, func(ev history.Event) bool {
		return ev.Ev == history.EvLost && ev.PID == w.PID && ev.Token == w.Token
	})
	// The deadline in force before the loss is the latest recorded of the
	// hold: the library's at its start, and the ones its renewals'
	// replies predict, which may pass the library's by a round trip. The
	// loss event's own (ValidUntil read at the loss) says when the hold
	// was lost, no later, so it cannot show an early loss by itself.
	dl := max(lost.DL, c.deadlineOf(w.PID, w.Token))
	switch {
	case !ok:
	case lost.T < dl-int64(c.base.TTL/20):
		t.Errorf("the new holder %s lost its hold (token %d) %v before its deadline, after the old holder resumed",
			w.Worker, w.Token, ms(dl-lost.T))
	default:
		t.Logf("the new holder %s lost its hold (token %d) at its deadline (a stall?)", w.Worker, w.Token)
	}
}

// Fault 2, with the negative control: a holder is SIGSTOPped between its
// validity check and its write (the worst moment) for longer than the
// TTL, while another worker takes over and writes; then it is resumed.
//
// With fencing, the resumed holder already considers itself lost, its
// stale write is rejected, and its late renewal does not disturb the new
// holder: zero lost updates. Without fencing, the same schedule loses an
// update, and the checker must say so. The short form runs one of the
// two, drawn at random (casesFor); DSYNC_LONG=1 runs both.
func TestSIGSTOPHolder(t *testing.T) {
	for _, reg := range casesFor(t, worker.RegFenced, worker.RegUnfenced) {
		t.Run(reg, func(t *testing.T) { sigstop(t, reg) })
	}
	t.Run("before-unlock", sigstopBeforeUnlock)
}

// A holder is SIGSTOPped after its work, just before Unlock, until
// another worker has taken over; resumed, it unlocks late. Unlock must
// report the loss (ErrLost), and its late release must not disturb the
// new holder.
func sigstopBeforeUnlock(t *testing.T) {
	cfg := baseConfig()
	cfg.UnlockWindow = 100 * time.Millisecond
	c := sharedCluster(t, cfg)
	c.hints = false // the suite's clusters without hints
	c.startN(3, nil)
	from := 0
	n := rounds(2, 20)
	// A round whose SIGSTOP came after the holder had called Unlock (a
	// loaded machine can take longer than the window to act on the
	// window's event) tests nothing: that Unlock was called before its
	// deadline, and may rightly release and return nil. It is played
	// again, up to this many times in all.
	missed, maxMissed := 0, 3*n
	for round := 0; round < n; round++ {
		win, next := c.await(from, 30*time.Second, "unlock window", func(ev history.Event) bool {
			return ev.Ev == history.EvUnlockWindow
		})
		from = next
		inWindow := next
		p := c.procOf(win)
		if p == nil {
			t.Fatalf("no process for %v", win)
		}
		stopped := history.Now()
		resume := c.pause(p)
		w, next := c.await(from, ttl+takeoverBound, "write by the next holder", func(ev history.Event) bool {
			return ev.Ev == history.EvWrite && ev.Token > win.Token && ev.Outcome == history.OutOK
		})
		from = next
		resume()
		// Looked for from the window on: a missed round's Unlock may come
		// before the next holder's write.
		rel, _ := c.await(inWindow, 2*ttl+takeoverBound, "the late Unlock", func(ev history.Event) bool {
			return ev.Ev == history.EvReleased && ev.PID == p.pid && ev.Token == win.Token
		})
		// The pause outlasts the deadline (another worker took over), so
		// an Unlock called after the SIGSTOP was called after its deadline.
		late := rel.DL != 0 && rel.T > rel.DL
		if late {
			t.Logf("paused %s (token %d) before Unlock; %s took over (token %d); the late Unlock returned %q",
				p.name, win.Token, w.Worker, w.Token, rel.Err)
		} else {
			missed++
			if missed > maxMissed {
				t.Fatalf("the SIGSTOP came after the holder's Unlock call in %d rounds: the machine is too slow for this test", missed)
			}
			t.Logf("paused %s (token %d) after it called Unlock (%v before the SIGSTOP, %v before its deadline): the round is played again",
				p.name, win.Token, ms(stopped-rel.T), ms(rel.DL-rel.T))
			round--
		}
		_, next = c.await(from, 2*ttl+takeoverBound, "the new holder's end", func(ev history.Event) bool {
			return ev.Ev == history.EvEnd && ev.PID == w.PID && ev.Token == w.Token
		})
		from = next
		c.checkUndisturbed(t, w)
	}
	c.check()
}

func sigstop(t *testing.T, reg string) {
	cfg := baseConfig()
	cfg.Register = reg
	cfg.Window = 100 * time.Millisecond
	c := sharedCluster(t, cfg)
	c.hints = false // the suite's clusters without hints
	c.startN(3, nil)
	from := 0
	// Unfenced: until enough stale writes went through (a write whose
	// outcome is unknown, e.g. after the driver dropped its connections
	// during the pause, may not have), at most a few more rounds.
	n, staleOK := rounds(2, 20), 0
	if reg == worker.RegUnfenced {
		n = rounds(1, 5)
	}
	// A round whose SIGSTOP came after the holder had left its window (a
	// loaded machine can take longer than the window to act on the
	// window's event) tests nothing, and is played again, up to this many
	// times in all.
	missed, maxMissed := 0, 3*n
	for round := 0; round < n || reg == worker.RegUnfenced && staleOK < n && round < n+3; round++ {
		win, next := c.await(from, 30*time.Second, "write window", func(ev history.Event) bool {
			return ev.Ev == history.EvWindow
		})
		from = next
		inWindow := next
		p := c.procOf(win)
		if p == nil {
			t.Fatalf("no process for %v", win)
		}
		resume := c.pause(p)
		// Another worker takes over and writes while p is stopped.
		w, next := c.await(from, ttl+takeoverBound, "write by the next holder", func(ev history.Event) bool {
			return ev.Ev == history.EvWrite && ev.Token > win.Token && ev.Outcome == history.OutOK
		})
		from = next
		resumedAt := history.Now()
		resume()

		// p resumes in its window and writes with its stale token. Its
		// write began after the next holder's only if the stop caught it
		// in the window.
		ws, _ := c.await(inWindow, 2*ttl+takeoverBound, "the resumed holder's write", func(ev history.Event) bool {
			return ev.Ev == history.EvWriteStart && ev.PID == p.pid && ev.Token == win.Token
		})
		if ws.T < w.T {
			missed++
			if missed > maxMissed {
				t.Fatalf("the SIGSTOP came after the holder's window (%v) in %d rounds: the machine is too slow for this test", cfg.Window, missed)
			}
			t.Logf("paused %s (token %d) after its window: its write began %v before the next holder's; the round is played again",
				p.name, win.Token, ms(w.T-ws.T))
			round--
			continue
		}
		wr, _ := c.await(inWindow, 2*ttl+takeoverBound, "the resumed holder's write", func(ev history.Event) bool {
			return ev.Ev == history.EvWrite && ev.PID == p.pid && ev.Token == win.Token
		})
		// It learns of the loss from Lost(), or, when it ended the hold
		// and called Unlock before the loss signal's goroutine ran after
		// the pause, from Unlock's ErrLost.
		lost, _ := c.await(from, 2*ttl+takeoverBound, "the resumed holder's loss signal", func(ev history.Event) bool {
			return (ev.Ev == history.EvLost || ev.Ev == history.EvReleased && ev.Lost) && ev.PID == p.pid && ev.Token == win.Token
		})
		if lost.DL >= resumedAt {
			t.Errorf("the resumed holder's deadline %v is after it was resumed", ms(lost.DL-resumedAt))
		}
		t.Logf("paused %s (token %d) in its write window; %s wrote under token %d; resumed, %s saw its loss %v after resuming, its write was %s",
			p.name, win.Token, w.Worker, w.Token, p.name, ms(lost.T-resumedAt), wr.Outcome)
		switch {
		case reg == worker.RegFenced && wr.Outcome == history.OutOK:
			t.Errorf("fenced register: the stale holder's write was accepted")
		case wr.Outcome == history.OutUnknown:
			// The register check below tells whether it applied.
			t.Logf("the stale holder's write failed: %s", wr.Err)
		case wr.Outcome == history.OutOK:
			staleOK++
		}
		// The new holder keeps its hold: the resumed holder's late renewal
		// (and its Unlock, which does not release a lost hold) changed
		// nothing for it.
		_, next = c.await(from, 2*ttl+takeoverBound, "the new holder's end", func(ev history.Event) bool {
			return ev.Ev == history.EvEnd && ev.PID == w.PID && ev.Token == w.Token
		})
		from = next
		c.checkUndisturbed(t, w)
	}
	if reg == worker.RegUnfenced {
		c.check(history.KindLostUpdate)
	} else {
		c.check()
	}
}

// Fault 3: the database server is killed (SIGKILL) mid-hold and restarted
// on the same data. Holders lose their holds at their deadlines; no token
// goes backwards; a new hold is granted soon after the restart (no lock
// stays stuck). The workers unlock a lost hold; relock (DSYNC_LONG=1
// only): they have an outage grace, the server is down for longer than
// the TTL, and the holder locks again on Lost() without Unlock, and must
// hold again with the same token, nobody else between (rideOutages).
func TestServerRestart(t *testing.T) {
	t.Run("unlock", serverRestart)
	t.Run("relock", func(t *testing.T) {
		longtest.Skip(t)
		rideOutages(t, []string{"restart"}, rounds(2, 15))
	})
}

func serverRestart(t *testing.T) {
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := baseConfig()
	cfg.HoldFor = 2 * ttl // hold through the restart
	c := newCluster(t, srv.URI(), db, cfg)
	c.startN(3, nil)
	var tok uint64
	from := 0
	for range rounds(2, 15) {
		ev, next := c.await(from, 60*time.Second, "hold", isAcquire(tok, 0))
		from = next
		time.Sleep(randDuration(0, c.base.HoldFor/2))
		before := c.maxToken()
		t0 := history.Now()
		srv.Kill()
		down := randDuration(ttl/2, 2*ttl)
		time.Sleep(down)
		srv.Restart()
		t1 := history.Now()
		c.fault("restart", nil, t0, t1)
		nx, next := c.await(from, 60*time.Second, "hold after the restart", func(ev history.Event) bool {
			return ev.Ev == history.EvAcquire && ev.T > t1
		})
		from, tok = next, nx.Token
		if nx.Token <= before {
			t.Errorf("after the restart %s holds token %d, not above %d granted before it", nx.Worker, nx.Token, before)
		}
		t.Logf("server down for %v (restart took %v) while %s held token %d; %s holds token %d %v after the restart",
			down, ms(t1-t0)-down, ev.Worker, ev.Token, nx.Worker, nx.Token, ms(nx.T-t1))
	}
	c.check()
}

// Fault 4: the holder is cut off from the server by its proxy: a full
// partition, a partition of the replies only (the server applies its
// renewals; it never hears so in time), or replies delayed by 0.9 TTL
// (each arrives after the deadline it could have extended, but before
// the call times out). The holder declares the loss at its local
// deadline without hearing from the server, no reply after the fault
// began extends its deadline, another worker takes over, and after
// healing (held requests are delivered late) nothing is double-held.
func TestPartition(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.HoldFor = 3 * ttl // long enough to be holding when the fault begins
	c := sharedCluster(t, cfg)
	c.viaProxy = true
	c.startN(3, nil)
	kinds := []string{"partition", "partition-replies", "delay-replies"}
	kinds = kindsFrom(t, kinds)
	var tok uint64
	from := 0
	for n := 0; n < rounds(3, 30); {
		ev, next := c.await(from, 60*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		p := c.procOf(ev)
		if p == nil {
			continue
		}
		time.Sleep(randDuration(ttl/3, ttl/2)) // some renewals first
		if c.ended(ev.PID, ev.Token) {
			continue
		}
		px := c.proxies[p.name]
		kind := kinds[n%len(kinds)]
		t0 := history.Now()
		switch kind {
		case "partition":
			px.Partition(faultproxy.Both)
		case "partition-replies":
			px.Partition(faultproxy.Down)
		case "delay-replies":
			px.SetDelay(faultproxy.Down, ttl*9/10)
		}
		lost, _ := c.await(from, 2*ttl+takeoverBound, "loss signal of the cut-off holder", func(e history.Event) bool {
			return e.Ev == history.EvLost && e.PID == ev.PID && e.Token == ev.Token
		})
		if limit := t0 + int64(ttl-ttl/20) + int64(time.Millisecond); lost.DL > limit {
			t.Errorf("%s: %s's deadline was extended to %v after the fault began: a reply sent later counted",
				kind, p.name, ms(lost.DL-t0))
		}
		nx, next := c.await(from, ttl+takeoverBound, "takeover", isAcquire(ev.Token, ev.PID))
		from, tok = next, nx.Token
		time.Sleep(randDuration(0, ttl))
		px.Heal()
		px.SetDelay(faultproxy.Both, 0)
		t1 := history.Now()
		c.fault(kind, p, t0, t1)
		t.Logf("%s of %s (token %d): loss signalled %v after the fault began, %v after its deadline; %s took over with token %d",
			kind, p.name, ev.Token, ms(lost.T-t0), ms(lost.T-lost.DL), nx.Worker, nx.Token)
		n++
	}
	// Let the healed workers compete again before checking.
	_, _ = c.await(from, 30*time.Second, "hold after healing", isAcquire(tok, 0))
	c.check()
}

// Fault 4b: delayed requests (see delayRequests). Each round stalls the
// current holder's requests just before a renewal, long enough for its
// driver to give up on them, and delivers them about a TTL later, after
// its later renewals succeeded; exclusion must hold all the same. The
// late writes the server applied are counted, and there must be some.
func TestDelayRequests(t *testing.T) {
	cfg := baseConfig()
	delayRequestsConfig(&cfg)
	c := sharedCluster(t, cfg)
	c.viaProxy = true
	c.startN(3, nil)
	var tok uint64
	from := 0
	for n, tries := 0, 0; n < rounds(3, 30); tries++ {
		if tries >= 5*rounds(3, 30) {
			// A renewal the fault cannot recognize would loop here forever.
			c.t.Fatalf("delay-requests injected in %d of %d holds", n, tries)
		}
		ev, next := c.await(from, 60*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		p := c.procOf(ev)
		if p == nil || !c.delayRequests(p, ev) {
			continue
		}
		n++
	}
	_, _ = c.await(from, 30*time.Second, "hold after the last fault", isAcquire(tok, 0))
	c.check()
}

// Fault 5: clock skew. The workers' wall clocks are an hour fast, an hour
// slow and right, and jump by hours (SIGUSR1) while they hold or wait;
// every other round the holder is killed, so that takeover by expiry (the
// decision that involves time) is exercised under skew. Exclusion holds.
func TestClockSkew(t *testing.T) {
	c := sharedCluster(t, baseConfig())
	offsets := []time.Duration{time.Hour, -time.Hour, 0}
	jumps := []time.Duration{-2 * time.Hour, 2 * time.Hour, 90 * time.Minute}
	c.startN(3, func(i int, cfg *worker.Config) {
		cfg.WallOffset, cfg.JumpStep = offsets[i-1], jumps[i-1]
	})
	for _, p := range c.live() {
		if p.cfg.WallOffset != 0 {
			now := history.Now()
			c.fault("clock-skew", p, now, now)
		}
	}
	var tok uint64
	from := 0
	for n := 0; n < rounds(4, 40); {
		ev, next := c.await(from, 60*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		p := c.procOf(ev)
		if p == nil {
			continue
		}
		time.Sleep(randDuration(0, c.base.HoldFor/3))
		// Jump the holder's clock mid-hold, and a waiter's.
		for _, q := range c.live() {
			if q == p || q.name == c.live()[n%len(c.live())].name {
				now := history.Now()
				_ = q.cmd.Process.Signal(syscall.SIGUSR1)
				c.fault("clock-jump", q, now, now)
			}
		}
		if n%2 == 0 && !c.ended(ev.PID, ev.Token) {
			dl, held := c.killHolder(p, ev)
			nx, next := c.await(from, ttl+takeoverBound, "takeover", isAcquire(ev.Token, ev.PID))
			from, tok = next, nx.Token
			t.Logf("killed %s, wall clock %+v; the next holder's wall clock is %+v", p.name, p.cfg.WallOffset, c.procOf(nx).cfg.WallOffset)
			if held {
				checkTakeover(t, p, ev, nx, dl)
			} else {
				t.Logf("%s had ended its hold (token %d) before the SIGKILL: its takeover is not checked", p.name, ev.Token)
			}
			c.restart(p)
		}
		n++
	}
	c.check()
}

// soakHandoffs is how many handoffs TestMixedFaults runs to: 40 in the
// long form (DSYNC_LONG=1), 15 in the short one, DSYNC_SOAK_HANDOFFS
// (default 1000) in the soak run.
func soakHandoffs() int {
	if !soak() {
		if !longtest.Enabled() {
			return 15
		}
		return 40
	}
	if n, err := strconv.Atoi(os.Getenv("DSYNC_SOAK_HANDOFFS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// All faults mixed, on four workers with skewed clocks, each behind its
// own proxy, on a server process of the test's own that can be
// restarted: the shape of the soak run. It runs until the workers have
// handed the lock over soakHandoffs times, injecting a random fault
// around every other hold, and checks that the lock keeps being granted
// after each.
func TestMixedFaults(t *testing.T) {
	t.Parallel()
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := baseConfig()
	cfg.HoldFor = 150 * time.Millisecond
	c := newCluster(t, srv.URI(), db, cfg)
	c.viaProxy = true
	offsets := []time.Duration{0, time.Hour, -time.Hour, 3 * time.Minute}
	c.startN(len(offsets), func(i int, cfg *worker.Config) {
		cfg.WallOffset, cfg.JumpStep = offsets[i-1], -2*offsets[i-1]+time.Hour
	})
	for _, p := range c.live() {
		if p.cfg.WallOffset != 0 {
			now := history.Now()
			c.fault("clock-skew", p, now, now)
		}
	}

	target := soakHandoffs()
	var tok uint64
	from := 0
	counts := make(map[string]int)
	start := time.Now()
	kinds := append(slices.Clone(faultKinds), "outage")
	for c.handoffs() < target {
		ev, next := c.await(from, 60*time.Second, "hold", isAcquire(tok, 0))
		from, tok = next, ev.Token
		p := c.procOf(ev)
		if p == nil || rand.IntN(2) == 0 {
			continue
		}
		kind := kinds[rand.IntN(len(kinds))]
		switch {
		case (kind == "restart" || kind == "outage") && rand.IntN(2) == 0:
			kind = "clock-jump" // restarts and outages are slow: fewer of them
		case counts["delay-requests"] == 0 && c.handoffs() >= target/2:
			kind = "delay-requests" // at least once: it must show its teeth
		}
		counts[kind]++
		time.Sleep(randDuration(0, cfg.HoldFor/2))
		c.inject(kind, p, srv)
		// No lock stays stuck: someone holds it again soon after the fault.
		after := history.Now()
		nx, next := c.await(from, 60*time.Second, "hold after "+kind, func(e history.Event) bool {
			return e.Ev == history.EvAcquire && e.T > after
		})
		from, tok = next, nx.Token
	}
	t.Logf("%d handoffs in %v; faults injected: %v", c.handoffs(), time.Since(start).Round(time.Second), counts)
	c.check()
}

// Fault 6: leader election under repeated faults of every kind above, on
// three candidates with skewed clocks that also observe: at most one
// leader at a time (terms are holds of the leadership lease, checked like
// locks), observers see leaders with increasing tokens (Observe strictly,
// direct Leader polls never decreasing), each the owner of that term, and
// the values each leader proclaims in its term in order, as proclaimed;
// and a new leader is elected after every fault.
func TestElection(t *testing.T) {
	t.Parallel()
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := baseConfig()
	cfg.Mode = worker.ModeElection
	cfg.Key = "e"
	cfg.Observe = true
	cfg.HoldFor = ttl * 3 / 2 // terms span renewals, and faults
	c := newCluster(t, srv.URI(), db, cfg)
	c.viaProxy = true
	offsets := []time.Duration{0, time.Hour, -time.Hour}
	c.startN(len(offsets), func(i int, cfg *worker.Config) {
		cfg.WallOffset, cfg.JumpStep = offsets[i-1], -2*offsets[i-1]+time.Hour
	})
	kinds := []string{"sigkill", "sigstop", "partition", "delay-replies", "clock-jump", "partition-replies", "restart", "sigstop-waiter", "delay-requests"}
	kinds = kindsFrom(t, kinds)
	var tok uint64
	from := 0
	for n := 0; n < rounds(len(kinds), 10*len(kinds)); {
		ev, next := c.await(from, 60*time.Second, "leader", isAcquire(tok, 0))
		from, tok = next, ev.Token
		p := c.procOf(ev)
		if p == nil {
			continue
		}
		kind := kinds[n%len(kinds)]
		time.Sleep(randDuration(0, ttl/2))
		if c.ended(ev.PID, ev.Token) {
			continue // the term is over: wait for the next
		}
		t0 := history.Now()
		c.inject(kind, p, srv)
		nx, next := c.await(from, 60*time.Second, "leader after "+kind, func(e history.Event) bool {
			return e.Ev == history.EvAcquire && e.T > t0 && e.Token > ev.Token
		})
		from, tok = next, nx.Token
		t.Logf("%s while %s led (token %d); %s leads with token %d, %v after the fault began",
			kind, p.name, ev.Token, nx.Worker, nx.Token, ms(nx.T-t0))
		n++
	}
	r := c.check()
	if r.Observations == 0 {
		t.Error("no observation recorded")
	}
	// Each leader proclaims two values: observers must have seen some.
	t.Logf("%d values proclaimed, %d observations of one", r.Proclaims, r.ValuesSeen)
	if r.Proclaims == 0 || r.ValuesSeen == 0 {
		t.Errorf("%d values proclaimed, %d observations of one: the check of values saw nothing", r.Proclaims, r.ValuesSeen)
	}
}
