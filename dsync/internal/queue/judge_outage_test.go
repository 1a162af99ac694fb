package queue_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The waiter's side of the outage rule (judge_outage.go), on the memory
// store in a synctest bubble: an owner O holds key k, a waiter W in
// another process waits on it, each engine over its own view of one store
// (memory.Process), so that a test cuts off one of them, or both (a
// store-wide outage). Renewals are sent by hand, where each test says.

const (
	sceneTTL   = 2 * time.Second
	sceneGrace = 30 * time.Second
)

type outageScene struct {
	t      *testing.T
	ctx    context.Context
	mem    *memory.Store
	po, pw *memory.Process
	o, w   *queue.Engine
	so, sw string
	co, cw *queue.Claim
	// wOps are the calls W's engine made, in order.
	wOps []string
	// clock is both engines' clock; oLate delays the replies of O's
	// renewals (resume_test.go).
	clock storeTimes
	oLate time.Duration
}

// newOutageScene starts O holding k and W waiting on it, O's engine with
// grace og, W's with wg; with uptime false, neither view serves the
// record of up-time. opts change both engines' Config.
func newOutageScene(t *testing.T, og, wg time.Duration, uptime bool, opts ...func(*queue.Config)) *outageScene {
	t.Helper()
	ctx := context.Background()
	mem := memory.New()
	sc := &outageScene{t: t, ctx: ctx, mem: mem, po: mem.Process(), pw: mem.Process()}
	clock := storeTimes{mem, time.Now()}
	sc.clock = clock
	ov := sc.po.Intercept(func(_ context.Context, c memory.Call, serve func() error) error {
		if c.Op == "RenewSessionUp" && sc.oLate > 0 {
			err := serve()
			time.Sleep(sc.oLate)
			return err
		}
		return nil
	})
	if uptime {
		sc.o = graceEngine(t, ov, clock, og, opts...)
	} else {
		sc.o = graceEngine(t, noUptime{ov}, clock, og, opts...)
	}
	wv := sc.pw.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		sc.wOps = append(sc.wOps, c.Op)
		return nil
	})
	if uptime {
		sc.w = graceEngine(t, wv, clock, wg, opts...)
	} else {
		sc.w = graceEngine(t, noUptime{wv}, clock, wg, opts...)
	}
	var err error
	if sc.so, _, err = sc.o.OpenSession(ctx, sceneTTL); err != nil {
		t.Fatal(err)
	}
	if sc.sw, _, err = sc.w.OpenSession(ctx, sceneTTL); err != nil {
		t.Fatal(err)
	}
	if sc.co, err = sc.o.Claim(ctx, "k", "O", sc.so, queue.ExclusiveTerms, false); err != nil {
		t.Fatal(err)
	}
	if head, _, err := sc.o.Walk(ctx, sc.co); err != nil || !head {
		t.Fatalf("O's walk = %v, %v; want it holding", head, err)
	}
	if sc.cw, err = sc.w.Claim(ctx, "k", "W", sc.sw, queue.ExclusiveTerms, false); err != nil {
		t.Fatal(err)
	}
	if head, _, err := sc.w.Walk(ctx, sc.cw); err != nil || head {
		t.Fatalf("W's first walk = %v, %v; want it waiting", head, err)
	}
	return sc
}

// renew renews O's session (o) or W's, and fails the test if it is not
// confirmed.
func (sc *outageScene) renew(o bool) {
	sc.t.Helper()
	e, s := sc.w, sc.sw
	if o {
		e, s = sc.o, sc.so
	}
	if found, _, err := e.RenewSession(sc.ctx, s, sceneTTL); err != nil || !found {
		sc.t.Fatalf("renewal of %s = %v, %v", s, found, err)
	}
}

// walk walks W's claim, and reports whether it holds.
func (sc *outageScene) walk() bool {
	sc.t.Helper()
	head, b, err := sc.w.Walk(sc.ctx, sc.cw)
	if err != nil {
		sc.t.Fatalf("W's walk: %v", err)
	}
	if !head && b.Session != sc.so {
		sc.t.Fatalf("W's walk blocked on %+v; want O's session %s", b, sc.so)
	}
	return head
}

// newestW is W's newest stamp (zero: none yet).
func (sc *outageScene) newestW() time.Time {
	own := sc.w.OwnUptime(sc.sw)
	if len(own) == 0 {
		return time.Time{}
	}
	return own[len(own)-1].To
}

// oExpiry is the expiry of O's session in the store.
func (sc *outageScene) oExpiry() time.Time {
	sc.t.Helper()
	s, found, err := sc.mem.GetSession(sc.ctx, sc.so)
	if err != nil || !found {
		sc.t.Fatalf("O's session: %v, %v", found, err)
	}
	return s.ExpiresAt
}

// readExpired reports whether a reader (W's engine, as a Client's Queue
// reads) finds O's claim expired: the record of up-time read before the
// session, as dsync's Queue reads it.
func (sc *outageScene) readExpired() bool { return sc.read(false) }

// read is readExpired, W's engine remembering its verdicts if remember.
func (sc *outageScene) read(remember bool) bool {
	sc.t.Helper()
	d, found, err := sc.w.ReadClaim(sc.ctx, "k", sc.co.Epoch)
	if err != nil || !found {
		sc.t.Fatalf("O's claim: %v, %v", found, err)
	}
	earliest := sc.mem.ServerTime().Earliest
	ev, err := sc.w.ReadEvidence(sc.ctx, []queue.Doc{d}, earliest)
	if err != nil {
		sc.t.Fatal(err)
	}
	s, found, err := sc.mem.GetSession(sc.ctx, d.Session)
	if err != nil {
		sc.t.Fatal(err)
	}
	return sc.w.ReadExpired(d, s, found, earliest, remember, ev)
}

// outage cuts both processes off the store for d.
func (sc *outageScene) outage(d time.Duration) {
	sc.po.SetReachable(false)
	sc.pw.SetReachable(false)
	time.Sleep(d)
	sc.po.SetReachable(true)
	sc.pw.SetReachable(true)
}

// TestOutageCreditsStoreWide: after an outage of the whole store (nobody's
// renewal lands) three TTLs long, well past O's expiry, W does not take
// O's claim while the store has been up less than a TTL since, nor does a
// reader find it expired; O's renewal after the outage keeps it; once O
// stops for good, W takes it within a renewal interval and a look of O's
// expiry, its own stamps showing a TTL of up-time after O's last renewal.
// Without the outage rule (judged by expiry alone) W takes the claim at
// its first walk after the outage.
func TestOutageCreditsStoreWide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newOutageScene(t, sceneGrace, sceneGrace, true)
		sc.renew(true)
		sc.renew(false)
		exp := sc.oExpiry()
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		if now := sc.mem.ServerTime().Earliest; !now.After(exp.Add(sceneTTL)) {
			t.Fatalf("the outage ended at %v, before O's expiry %v + TTL", now, exp)
		}
		if sc.walk() || sc.readExpired() {
			t.Fatal("W took (or a reader found expired) O's claim at its first walk after a store-wide outage")
		}
		// W's own renewals since the outage: an up-run of 2/3 TTL.
		for range 3 {
			sc.renew(false)
			if sc.walk() || sc.readExpired() {
				t.Fatal("W took O's claim with less than a TTL of up-time since a store-wide outage")
			}
			time.Sleep(sceneTTL / 3)
		}
		// O comes back (as an owner that rides the outage through will).
		sc.renew(true)
		if sc.walk() || sc.readExpired() {
			t.Fatal("W took O's claim after O's renewal")
		}
		exp = sc.oExpiry()
		// O stops for good; W renews every TTL/3 and looks every 50 ms.
		next := time.Now()
		for !sc.walk() {
			if !time.Now().Before(next) {
				sc.renew(false)
				next = next.Add(sceneTTL / 3)
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := sc.mem.ServerTime().Earliest
		if took.Before(exp) || took.After(exp.Add(sceneTTL/3+100*time.Millisecond)) {
			t.Errorf("W took O's claim at %v; want it in [O's expiry %v, + TTL/3 + 100ms]", took, exp)
		}
		if newest := sc.newestW(); newest.Before(exp) {
			t.Errorf("W took O's claim at %v with its newest stamp %v, before O's expiry %v", took, newest, exp)
		}
	})
}

// TestOutageCutOffAloneTakenOver: O cut off alone while another session
// renews every TTL/3 (W's own, or that of a third process R, which W
// reads from the store's record): W takes O's claim once the record shows
// a TTL of up-time after O's last renewal (a stamp at or after O's
// expiry: the chain runs from before it), within a renewal interval and a
// look of that expiry; never before such a stamp is recorded. By expiry
// alone W would take it at the expiry, the last stamp earlier.
func TestOutageCutOffAloneTakenOver(t *testing.T) {
	for _, byR := range []bool{false, true} {
		t.Run(map[bool]string{false: "W renews", true: "R renews"}[byR], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := newOutageScene(t, sceneGrace, sceneGrace, true)
				renew := func() { sc.renew(false) }
				newest := sc.newestW
				if byR {
					r := graceEngine(t, sc.mem.Process(), storeTimes{sc.mem, time.Now()}, sceneGrace)
					rs, _, err := r.OpenSession(sc.ctx, sceneTTL)
					if err != nil {
						t.Fatal(err)
					}
					renew = func() {
						if found, _, err := r.RenewSession(sc.ctx, rs, sceneTTL); err != nil || !found {
							t.Fatalf("R's renewal = %v, %v", found, err)
						}
					}
					newest = func() time.Time {
						own := r.OwnUptime(rs)
						return own[len(own)-1].To
					}
				}
				sc.renew(true)
				exp := sc.oExpiry()
				sc.po.SetReachable(false)
				time.Sleep(100 * time.Millisecond) // renewals out of O's phase
				next := time.Now()
				for {
					if !time.Now().Before(next) {
						renew()
						next = next.Add(sceneTTL / 3)
					}
					last := newest()
					if sc.walk() {
						took := sc.mem.ServerTime().Earliest
						if last.Before(exp) {
							t.Fatalf("W took O's claim at %v, the newest stamp %v before O's expiry %v (no TTL of up-time after O's last renewal)", took, last, exp)
						}
						if took.After(exp.Add(sceneTTL/3 + 100*time.Millisecond)) {
							t.Errorf("W took O's claim at %v; want by O's expiry %v + TTL/3 + 100ms", took, exp)
						}
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
		})
	}
}

// TestOutageEvidenceBeforeSession: a waiter whose own stamps do not
// decide reads the store's record of up-time before the session it
// judges: evidence read after it could hold a stamp of a renewal that
// raised the session's expiry after the read, and prove dead a session
// its owner renewed in time (doc_outage.go, O2).
func TestOutageEvidenceBeforeSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newOutageScene(t, sceneGrace, sceneGrace, true)
		r := graceEngine(t, sc.mem.Process(), storeTimes{sc.mem, time.Now()}, sceneGrace)
		rs, _, err := r.OpenSession(sc.ctx, sceneTTL)
		if err != nil {
			t.Fatal(err)
		}
		sc.renew(true)
		exp := sc.oExpiry()
		sc.po.SetReachable(false)
		for time.Now().Before(exp.Add(sceneTTL / 2)) {
			if _, _, err := r.RenewSession(sc.ctx, rs, sceneTTL); err != nil {
				t.Fatal(err)
			}
			time.Sleep(sceneTTL / 3)
		}
		sc.wOps = nil
		sc.walk()
		up, sess := slices.Index(sc.wOps, "ReadUptime"), slices.Index(sc.wOps, "GetSession")
		if up < 0 || sess < 0 || up > sess {
			t.Errorf("W's calls judging O's claim: %v; want ReadUptime before GetSession", sc.wOps)
		}
	})
}

// TestOutageStampPastGraceKills: with W's renewals further apart than
// TTL/2 (no chain of the record ever runs a TTL), O cut off alone is
// judged dead by the first stamp at or after its expiry + the grace, and
// not before.
func TestOutageStampPastGraceKills(t *testing.T) {
	const grace = 3 * time.Second
	synctest.Test(t, func(t *testing.T) {
		sc := newOutageScene(t, grace, grace, true)
		sc.renew(true)
		exp := sc.oExpiry()
		sc.po.SetReachable(false)
		time.Sleep(100 * time.Millisecond)
		for {
			sc.renew(false)
			newest := sc.newestW()
			past := !newest.Before(exp.Add(grace))
			if took := sc.walk(); took != past {
				t.Fatalf("W's walk holds = %v with its newest stamp %v, O's expiry %v + grace %v", took, newest, exp, grace)
			}
			if past {
				if !sc.readExpired() {
					t.Error("a reader finds O's claim live with a stamp past its expiry + grace")
				}
				return
			}
			if sc.readExpired() {
				t.Fatalf("a reader finds O's claim expired with W's newest stamp %v, O's expiry %v + grace %v", newest, exp, grace)
			}
			time.Sleep(sceneTTL/2 + 200*time.Millisecond)
		}
	})
}

// TestOutageNoGraceAsToday: a claim without a grace (its owner has none,
// whatever its waiter has), or on a store that keeps no record of
// up-time, is judged by its expiry alone: W takes it at its first walk
// after a store-wide outage past its expiry, and a reader finds it
// expired.
func TestOutageNoGraceAsToday(t *testing.T) {
	for _, c := range []struct {
		name   string
		og, wg time.Duration
		uptime bool
	}{
		{"no grace", 0, 0, true},
		{"owner without a grace", 0, sceneGrace, true},
		{"store without the record", sceneGrace, sceneGrace, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := newOutageScene(t, c.og, c.wg, c.uptime)
				sc.renew(true)
				sc.renew(false)
				time.Sleep(100 * time.Millisecond)
				sc.outage(3 * sceneTTL)
				if !sc.readExpired() {
					t.Error("a reader finds O's claim live past its expiry")
				}
				if !sc.walk() {
					t.Error("W does not take O's claim past its expiry")
				}
				if _, found, err := sc.mem.Get(sc.ctx, queue.EndID("k", sc.co.Epoch, sc.co.Nonce)); err != nil || !found {
					t.Errorf("O's claim's dead marker: %v, %v", found, err)
				}
			})
		})
	}
}
