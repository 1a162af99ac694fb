package queue_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// Store-wide outages (TestSimulationOutage, a seed stream of its own, so
// that TestSimulation's seeds run as they did before outages were
// modelled). On an outage seed every owner's engine has an outage grace,
// and the store keeps the record of up-time (driver.UptimeStore: the
// network serves it on every seed, but only an engine with a grace
// renews through it, or reads it for a claim that carries one). One to
// three times per run the whole store goes away for 0.2 to 5 TTLs (some
// about TTL/2, some about the grace): every request that arrives meanwhile
// is dropped (a restart: its caller times out) or held until just after
// the outage ends (a stopped server), by outage; a torn update's write
// due meanwhile waits for the end; a reply on its way when the outage
// begins is lost half the time. The server clock goes on, and the
// failovers of scheduleFaults may step it inside an outage. Owners
// suspend their sessions at their local deadline, and resume them or find
// them dead after the store is back (simresume_test.go); a claim whose
// owner crashed in the outage is freed only when a waiter judges it dead.
// On these seeds the sessions cleaner keeps a document six graces past
// its expiry (retention), as dsync/mongo keeps one an hour.
//
// The checker of the waiter's rule (credit): a claim with a grace whose
// session's stored expiry Ê_a at the start a of an outage [a, b) longer
// than TTL/2 lay after a, must not get its dead marker before b + TTL or
// Ê_a + Grace (less a slack for the server clock's offset from true
// time): no stamp lies in the outage, so the record shows no TTL of
// up-time after Ê − TTL before b + TTL, and no stamp at Ê + Grace before
// then. A marker sent before a is left out: its verdict read the
// session before the outage, when its expiry may have been lower than
// Ê_a (a renewal landed between that read and a), and the outage only
// held it. Seed 7406 of 12,000: a marker sent at 9.758 s, on an expiry
// of 9.447 s, before the owner's renewal raised it to 11.258 s at
// 9.975 s, landed at the end of an outage from 10.165 s; the owner's
// resume check never resumed. The existing checkers (no two conflicting
// holds valid at once, tokens never back, observers and readers never
// see a head go back, renewal storms) run as on every seed.

var simOutageSeeds = flag.Int("queue.outageseeds", 0, "outage simulation seeds to run (default 150; with DSYNC_LONG=1, 2000, or 300 with -race)")

// creditSlack is what the credit checker allows for the server clock's
// offset from true time (half the member skew either way) and a stamp's
// place in a window of the network's delays.
const creditSlack = 2 * simSkew

// simUp is what RenewSessionUp wrote to one session document: the record
// it sent, and its stamp.
type simUp struct {
	up    []queue.UpSpan
	stamp time.Time
}

func cloneUp(m map[string]map[int]simUp) map[string]map[int]simUp {
	out := make(map[string]map[int]simUp, len(m))
	for id, gens := range m {
		out[id] = maps.Clone(gens)
	}
	return out
}

var _ driver.UptimeStore = net{}

// RenewSessionUp is RenewSession, torn the same way, whose write also
// replaces the document's record and stamps it with the server's time as
// the write applies. A document gone by then is not written, and the
// renewal reports it not found.
func (n net) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []queue.UpSpan) (stamp time.Time, found bool, err error) {
	sv := n.s.server
	up = slices.Clone(up)
	if cerr := n.callTorn(ctx, func() func() {
		old, ok := sv.sessions[id][gen]
		return func() {
			if _, still := sv.sessions[id][gen]; ok && still {
				n.writeTornMax(id, gen, old, expires)
				stamp, found = sv.now(), true
				if sv.up[id] == nil {
					sv.up[id] = make(map[int]simUp)
				}
				sv.up[id][gen] = simUp{up: up, stamp: stamp}
			}
			n.s.tracef("renewsessionup %s gen %d %v -> %v stamp %v", id, gen, expires.Sub(n.s.t0), found, stamp.Sub(n.s.t0))
		}
	}); cerr != nil {
		return time.Time{}, false, cerr
	}
	return stamp, found, nil
}

// InsertSessionUp is InsertSession, the document marked in the same
// write (with no record and no stamp yet).
func (n net) InsertSessionUp(ctx context.Context, sess queue.Session) error {
	return n.insertSession(ctx, sess, true)
}

// ReadUptime returns the records and stamps of every session document
// RenewSessionUp wrote that end at or after since, and whether a document
// unexpired at since was written by neither it nor InsertSessionUp.
func (n net) ReadUptime(ctx context.Context, since time.Time) (u driver.Uptime, err error) {
	sv := n.s.server
	if cerr := n.call(ctx, func() {
		for id, gens := range sv.sessions {
			for gen, exp := range gens {
				rec, marked := sv.up[id][gen]
				if !marked {
					u.Unmarked = u.Unmarked || !exp.Before(since)
					continue
				}
				spans := slices.Clip(rec.up)
				if !rec.stamp.IsZero() { // zero: inserted marked, not renewed yet
					spans = append(spans, queue.UpSpan{From: rec.stamp, To: rec.stamp})
				}
				for _, sp := range spans {
					if !sp.To.Before(since) {
						u.Spans = append(u.Spans, sp)
					}
				}
			}
		}
		n.s.tracef("readuptime since %v -> %d spans", since.Sub(n.s.t0), len(u.Spans))
	}); cerr != nil {
		return driver.Uptime{}, cerr
	}
	return u, nil
}

// simOutage is the store-wide outages of an outage seed (nil on the
// others), drawn from a stream of their own.
type simOutage struct {
	rng   *rand.Rand
	grace time.Duration
	// span is the engines' bucket span (0: simSpan's): on three seeds in
	// four at least TTL + grace + 2 s, so that a key's segment outlives an
	// outage and the claims left in it are judged by the record, rather
	// than left behind by the next segment's start.
	span    time.Duration
	windows []*outageWindow
	// credit: the checker's findings; resumed: the resume checker's
	// (simresume_test.go).
	credit, resumed []string
	// ownMarks are the IDs of the dead markers owners inserted for their
	// own claims (MarkDead), which the credit checker leaves out.
	ownMarks map[string]bool
}

// outageWindow is one outage, [a, b) in true time; hold: requests are
// held until b (else dropped). exp is each session's stored expiry at a,
// of the sessions found with their first generation.
type outageWindow struct {
	a, b time.Duration
	hold bool
	exp  map[string]time.Time
}

// newSimOutage draws the grace and the outages of seed.
func newSimOutage(seed int64) *simOutage {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x0a7a9e))
	o := &simOutage{rng: rng, grace: 2*time.Second + time.Duration(rng.IntN(2000))*time.Millisecond, ownMarks: map[string]bool{}}
	if rng.IntN(4) > 0 {
		o.span = (simTTL + o.grace + 2*time.Second).Truncate(time.Second) + time.Second
	}
	at := time.Second + time.Duration(rng.Int64N(int64(simLength/3)))
	for range 1 + rng.IntN(3) {
		var d time.Duration
		switch rng.IntN(3) {
		case 0: // about H: 0.2 to 0.8 TTL
			d = simTTL/5 + time.Duration(rng.Int64N(int64(simTTL*3/5)))
		case 1:
			d = simTTL*4/5 + time.Duration(rng.Int64N(int64(simTTL*22/10)))
		default: // about the grace, up to 5 TTL
			d = min(o.grace-simTTL/2+time.Duration(rng.Int64N(int64(3*simTTL/2))), 5*simTTL)
		}
		if at+d > simLength {
			break
		}
		o.windows = append(o.windows, &outageWindow{a: at, b: at + d, hold: rng.IntN(2) == 0})
		at += d + 2*simTTL + time.Duration(rng.Int64N(int64(4*simTTL)))
	}
	return o
}

// schedule notes, at the start of each outage, each session's expiry.
func (o *simOutage) schedule(s *sim) {
	for _, w := range o.windows {
		s.at(w.a, func() {
			w.exp = make(map[string]time.Time)
			for id, gens := range s.server.sessions {
				if _, first := gens[0]; first {
					w.exp[id] = slices.MaxFunc(slices.Collect(maps.Values(gens)), time.Time.Compare)
				}
			}
			s.stats.outages++
			s.tracef("OUTAGE until %v (hold %v)", w.b, w.hold)
		})
		// Half the outages, a holder dies early in it: its claims are
		// ended only by a waiter's dead marker, once the record proves it.
		if o.rng.IntN(2) == 0 {
			at, pick := w.a+time.Duration(o.rng.Int64N(int64(min(w.b-w.a, 200*time.Millisecond)))), o.rng.IntN(len(s.owners)+1)
			s.at(at, func() { o.crashHolder(s, pick) })
		}
	}
}

// crashHolder crashes an owner that holds a claim, the pick-th of them
// (modulo their number), if one does.
func (o *simOutage) crashHolder(s *sim, pick int) {
	var holders []*owner
	for _, ow := range s.owners {
		if !ow.crashed && len(ow.holds) > 0 {
			holders = append(holders, ow)
		}
	}
	if len(holders) == 0 {
		return
	}
	h := holders[pick%len(holders)]
	h.crashed = true
	s.stats.outageCrashes++
	s.tracef("CRASH %s in the outage", h.name)
}

// retention is how long after its expiry the sessions cleaner keeps a
// session document: simRetention, but on outage seeds six times the
// grace (as dsync/mongo keeps them an hour, six times MaxGrace): the
// record of up-time a verdict rests on must outlive every verdict that
// needs it (doc_outage.go, O1), and a session's first generation every
// resume check of the session.
func (o *simOutage) retention() time.Duration {
	if o == nil {
		return simRetention
	}
	return 6 * o.grace
}

// down returns the outage the store is in at true time t (nil: none).
func (o *simOutage) down(t time.Duration) *outageWindow {
	for _, w := range o.windows {
		if w.a <= t && t < w.b {
			return w
		}
	}
	return nil
}

// after is a moment just after w ends, when a held request lands.
func (o *simOutage) after(w *outageWindow) time.Duration {
	return w.b + time.Duration(1+o.rng.IntN(50))*time.Millisecond
}

// arrive serves a request arriving now (serve), unless the store is out:
// then it is held until the outage ends, or dropped (lost).
func (o *simOutage) arrive(s *sim, serve, lost func()) {
	var w *outageWindow
	if o != nil {
		w = o.down(s.now)
	}
	switch {
	case w == nil:
		serve()
	case w.hold:
		s.stats.outageHeld++
		s.at(o.after(w), func() { o.arrive(s, serve, lost) })
	default:
		s.stats.outageDropped++
		lost()
	}
}

// apply runs the write of a torn update due now, or once the outage the
// store is in ends.
func (o *simOutage) apply(s *sim, write func()) {
	var w *outageWindow
	if o != nil {
		w = o.down(s.now)
	}
	if w == nil {
		write()
		return
	}
	s.at(o.after(w), func() { o.apply(s, write) })
}

// replyLost reports whether a reply sent at from and due at to is lost:
// half the time, if an outage began in between.
func (o *simOutage) replyLost(from, to time.Duration) bool {
	if o == nil {
		return false
	}
	for _, w := range o.windows {
		if from < w.a && w.a <= to {
			return o.rng.IntN(2) == 0
		}
	}
	return false
}

// dead checks a dead marker of claim d's session, sent at true time sent,
// that landed now (see the credit checker above).
func (o *simOutage) dead(s *sim, d queue.Doc, sent time.Duration) {
	if o == nil || o.ownMarks[d.ID] {
		return
	}
	for _, w := range o.windows {
		exp, ok := w.exp[d.Session]
		if !ok || s.now < w.a || w.b-w.a <= simTTL/2+creditSlack || s.server.lastReset >= w.a || sent < w.a {
			continue
		}
		if expA := exp.Sub(s.t0); w.a < expA-creditSlack {
			s.stats.creditChecked++
			if bound := min(w.b+simTTL, expA+o.grace) - creditSlack; s.now < bound {
				o.credit = append(o.credit, fmt.Sprintf("%s#%d of session %s marked dead at %v, after an outage [%v, %v) that began before its expiry %v: not before %v",
					d.Key, d.Epoch, d.Session, s.now, w.a, w.b, expA, bound))
			}
		}
	}
}

// recordDead reports whether the store's record of up-time proves the
// session of claim d dead, its expiry being exp (the outage rule on all of
// the record): true for a claim without a grace or a TTL, judged by its
// expiry.
func (sv *server) recordDead(d queue.Doc, exp time.Time) bool {
	if d.Grace <= 0 || d.TTL <= 0 {
		// Judged by expiry alone, as the engine judges it: a claim
		// inserted in a session its engine no longer knows carries no
		// TTL, but the engine's grace.
		return true
	}
	var ev []queue.UpSpan
	for id, gens := range sv.up {
		for gen, rec := range gens {
			if _, ok := sv.sessions[id][gen]; ok {
				ev = append(append(ev, rec.up...), queue.UpSpan{From: rec.stamp, To: rec.stamp})
			}
		}
	}
	rule, err := queue.NewOutageRule(d.TTL, d.Grace)
	if err != nil {
		panic(err) // the simulation's claims carry valid terms
	}
	dead, err := rule.Dead(ev, exp.Add(-d.TTL), exp)
	return err == nil && dead
}

func outageSeeds() []int64 {
	if *simSeed >= 0 {
		return []int64{*simSeed}
	}
	n := *simOutageSeeds
	if n == 0 {
		n = 2000
		switch {
		case !longtest.Enabled():
			n = 150
		case raceEnabled:
			n = 300
		}
	}
	return seedRange(n)
}

// TestSimulationOutage runs the simulation with store-wide outages and an
// outage grace (see the top of this file): every checker of
// TestSimulation, and the waiter's credit of the outage.
func TestSimulationOutage(t *testing.T) {
	var total simStats
	holds, dead := 0, 0
	for _, seed := range outageSeeds() {
		r, st := runSimOpts(t, seed, queue.NoBug, simNoBug, *simSeed >= 0, simOpts{outage: true})
		total.add(st)
		holds += r.NumHolds
		if !r.OK() {
			var b strings.Builder
			for _, v := range r.Violations {
				fmt.Fprintf(&b, "\n  %v", v)
			}
			t.Fatalf("seed %d (replay: go test ./dsync/internal/queue -run TestSimulationOutage -queue.seed=%d):%s", seed, seed, b.String())
		}
		dead += st.dead
	}
	t.Logf("%d outage seeds: %d holds, %d dead markers; %d outages, %d requests dropped and %d held by them, %d holders crashed in them; %d dead markers checked against the outage's credit; %d sessions suspended at their deadline, %d resumed, %d found dead by their check, %d given up; %d holds suspended, %d resumed, %d found dead, %d given up; %d calls made requests side by side",
		len(outageSeeds()), holds, dead, total.outages, total.outageDropped, total.outageHeld, total.outageCrashes, total.creditChecked,
		total.ownerSuspends, total.resumes, total.resumeDead, total.resumeGiveUps, total.holdsSuspended, total.holdsResumed, total.holdsFoundDead, total.holdsGivenUp, total.branched)
	if *simSeed < 0 && (holds == 0 || dead == 0 || total.outages == 0 || total.outageDropped == 0 || total.outageHeld == 0 ||
		total.outageCrashes == 0 || total.creditChecked == 0 || total.holdsResumed == 0 || total.resumeDead == 0 || total.resumeGiveUps == 0 || total.branched == 0) {
		t.Fatalf("the outage simulation exercised too little: %d holds; %+v", holds, total)
	}
}

// TestSimulationOutageCatchesPlantedBugs: a waiter that judges a claim
// with a grace by its expiry alone, and an owner that resumes a suspended
// session without the evidence, are caught on the outage seeds.
func TestSimulationOutageCatchesPlantedBugs(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	seeds := outageSeeds()
	if *simSeed < 0 && len(seeds) < 1000 {
		seeds = seedRange(1000)
	}
	for _, tc := range []struct {
		name string
		bug  queue.Bug
	}{
		{"a waiter that credits no outage", queue.BugOutageUncredited},
		{"an owner that resumes without the evidence", queue.BugResumeUnchecked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, seed := range seeds {
				if r, _ := runSimOpts(t, seed, tc.bug, simNoBug, false, simOpts{outage: true}); !r.OK() {
					t.Logf("caught on seed %d: %v", seed, r.Violations[0])
					return
				}
			}
			t.Errorf("no seed out of %d caught %s", len(seeds), tc.name)
		})
	}
}
