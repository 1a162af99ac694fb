package queue_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The owner's side of the outage rule (resume.go), on the scenes of
// judge_outage_test.go: O holds k in a session whose lease it keeps by
// hand, W waits on k. At O's deadline the lease is suspended; after a
// renewal of O's is confirmed, its resume check either resumes the lease
// (same claim, same token) or finds the session dead (retire, mark dead),
// or waits.

// resumeScene is an outage scene with O's lease and its suspension.
type resumeScene struct {
	*outageScene
	lease *queue.Lease
	sus   *queue.Suspension
}

// newResumeScene starts the scene and O's lease, counted from a renewal
// of O's confirmed now; W renews too.
func newResumeScene(t *testing.T, grace time.Duration, opts ...func(*queue.Config)) *resumeScene {
	t.Helper()
	sc := &resumeScene{outageScene: newOutageScene(t, grace, grace, true, opts...)}
	found, sent, err := sc.o.RenewSession(sc.ctx, sc.so, sceneTTL)
	if err != nil || !found {
		t.Fatalf("O's renewal = %v, %v", found, err)
	}
	lease, ok := queue.NewLease(sceneTTL, sceneTTL/3, sent, sc.clock.Mono())
	if !ok {
		t.Fatal("O's lease is not usable at once")
	}
	sc.lease = lease
	sc.renew(false)
	return sc
}

// suspend suspends O's lease, past its deadline, with O's claim.
func (sc *resumeScene) suspend() {
	sc.t.Helper()
	if now := sc.clock.Mono(); !sc.lease.Suspend(now) {
		sc.t.Fatalf("O's lease not suspended at %v (deadline %v)", now, sc.lease.Deadline())
	}
	sus, err := sc.o.Suspend(sc.so, sc.lease, []queue.Ref{sc.co.Ref})
	if err != nil {
		sc.t.Fatal(err)
	}
	sc.sus = sus
}

// check renews O's session and runs its resume check; on ResumeDead it
// retires the lease and marks O's claim dead, as an owner does.
func (sc *resumeScene) check() (queue.ResumeVerdict, time.Duration, error) {
	sc.t.Helper()
	found, sent, err := sc.o.RenewSession(sc.ctx, sc.so, sceneTTL)
	if err != nil || !found {
		sc.t.Fatalf("O's renewal after the outage = %v, %v", found, err)
	}
	if ev := sc.lease.Confirm(sent, sc.clock.Mono()); ev != queue.LeaseSuspended {
		sc.t.Fatalf("a suspended lease's Confirm = %v; want LeaseSuspended", ev)
	}
	v, why := sc.sus.Check(sc.ctx, sc.lease, sent)
	if v == queue.ResumeDead {
		sc.lease.Retire()
		if err := sc.sus.MarkDead(sc.ctx, sc.lease); err != nil {
			sc.t.Fatal(err)
		}
	}
	return v, sent, why
}

// oEnd returns the kind of O's claim's end marker ("" if none).
func (sc *resumeScene) oEnd() string {
	sc.t.Helper()
	m, found, err := sc.mem.Get(sc.ctx, queue.EndID("k", sc.co.Epoch, sc.co.Nonce))
	if err != nil {
		sc.t.Fatal(err)
	}
	if !found {
		return ""
	}
	return m.Kind
}

// TestResumeAfterStoreWideOutage: after a store-wide outage of three
// TTLs, past O's deadline, O's check after its first renewal resumes the
// lease: the same claim (its nonce and token, no end marker), a deadline
// counted from that renewal, and W did not take k meanwhile nor does it
// after. Without the resume (the lease retired at its deadline, as
// without a grace) O holds nothing, and W takes k once a TTL of up-time
// passed.
func TestResumeAfterStoreWideOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		token := sc.co.Epoch
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		sc.suspend()
		if sc.walk() {
			t.Fatal("W took k at its first walk after a store-wide outage")
		}
		v, sent, why := sc.check()
		if v != queue.ResumeResumed {
			t.Fatalf("O's check after a store-wide outage = %v (%v); want it resumed", v, why)
		}
		if sc.lease.Suspended() || sc.lease.Retired() || sc.lease.Sent() != sent {
			t.Fatalf("O's lease after the resume: suspended %v, retired %v, sent %v; want relied on from %v",
				sc.lease.Suspended(), sc.lease.Retired(), sc.lease.Sent(), sent)
		}
		if want := sent + sceneTTL - sceneTTL/20; sc.lease.Deadline() != want {
			t.Errorf("O's resumed deadline = %v; want %v", sc.lease.Deadline(), want)
		}
		d, found, err := sc.mem.Get(sc.ctx, queue.ClaimID("k", token))
		if err != nil || !found || d.Nonce != sc.co.Nonce || d.Session != sc.so || sc.oEnd() != "" {
			t.Fatalf("O's claim after the resume: %+v, %v, %v, end %q; want #%d, nonce %s, unended", d, found, err, sc.oEnd(), token, sc.co.Nonce)
		}
		// O renews on; W looks for two TTLs and never takes k.
		for end := time.Now().Add(2 * sceneTTL); time.Now().Before(end); time.Sleep(sceneTTL / 3) {
			sc.renew(true)
			sc.renew(false)
			if sc.walk() {
				t.Fatalf("W took k, held by O's resumed claim #%d", token)
			}
		}
	})
}

// TestResumeCutOffAloneFindsDead: O cut off alone while a third process R
// renews every TTL/3: once the record shows a TTL of up-time after O's
// last renewal, O's check, after a renewal that reaches the store again,
// finds the session dead; O retires it and marks its claim dead, and W
// takes k at its next walk. Nobody marked the claim before O's check:
// the record alone decides. Without the outage rule in the check
// (BugResumeUnchecked's step), O would resume beside a waiter that may
// take k.
func TestResumeCutOffAloneFindsDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		r, rs := sc.thirdProcess()
		exp := sc.oExpiry()
		sc.po.SetReachable(false)
		for time.Now().Before(exp.Add(sceneTTL / 2)) {
			if found, _, err := r.RenewSession(sc.ctx, rs, sceneTTL); err != nil || !found {
				t.Fatalf("R's renewal = %v, %v", found, err)
			}
			time.Sleep(sceneTTL / 3)
		}
		sc.po.SetReachable(true)
		sc.suspend()
		if sc.oEnd() != "" {
			t.Fatalf("O's claim ended (%s) before O's check", sc.oEnd())
		}
		v, _, why := sc.check()
		if v != queue.ResumeDead || !strings.Contains(why.Error(), "record of up-time proves") {
			t.Fatalf("O's check after it was cut off alone = %v (%v); want dead by the record", v, why)
		}
		if !sc.lease.Retired() {
			t.Error("O's lease is not retired after its check found it dead")
		}
		if got := sc.oEnd(); got != queue.KindDead {
			t.Errorf("O's claim's end after its check found it dead = %q; want %q", got, queue.KindDead)
		}
		if !sc.walk() {
			t.Error("W does not take k after O marked its claim dead")
		}
	})
}

// TestResumeClaimGone: after a store-wide outage that the record credits,
// a claim of O's that has ended (a dead marker, here inserted as a waiter
// would) or is gone from the store (the collection emptied) under the
// suspended hold is not resumed: the check finds it and O retires. Without
// the read-back O would resume a hold whose claim no longer holds.
func TestResumeClaimGone(t *testing.T) {
	for _, c := range []string{"ended", "emptied"} {
		t.Run(c, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := newResumeScene(t, sceneGrace)
				time.Sleep(100 * time.Millisecond)
				sc.outage(3 * sceneTTL)
				sc.suspend()
				if c == "ended" {
					m := queue.Doc{ID: queue.EndID("k", sc.co.Epoch, sc.co.Nonce), Key: "k", Epoch: sc.co.Epoch, Kind: queue.KindDead,
						Nonce: sc.co.Nonce, Session: sc.so, Sent: sc.mem.ServerTime().Latest}
					if err := sc.mem.Insert(sc.ctx, m); err != nil {
						t.Fatal(err)
					}
				} else {
					sc.mem.DeleteNow(queue.ClaimID("k", sc.co.Epoch))
				}
				v, _, why := sc.check()
				if v != queue.ResumeDead || !strings.Contains(why.Error(), "claim k#") {
					t.Fatalf("O's check with its claim %s = %v (%v); want dead by the claim's read-back", c, v, why)
				}
				if !sc.lease.Retired() {
					t.Error("O's lease is not retired")
				}
			})
		})
	}
}

// TestResumeReplyTooLate: after a store-wide outage that the record
// credits, a renewal whose reply comes a TTL after its send does not
// resume O (its deadline would be past): the lease stays suspended, and
// the next renewal, answered at once, resumes it. Without the rule on the
// reply's time O would rely on a deadline already past.
func TestResumeReplyTooLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		sc.suspend()
		sc.oLate = sceneTTL
		v, _, why := sc.check()
		if v != queue.ResumeWait || !sc.lease.Suspended() {
			t.Fatalf("O's check after a renewal answered a TTL late = %v (%v), suspended %v; want it waiting, suspended",
				v, why, sc.lease.Suspended())
		}
		sc.oLate = 0
		if v, _, why := sc.check(); v != queue.ResumeResumed {
			t.Fatalf("O's check after a renewal answered at once = %v (%v); want it resumed", v, why)
		}
	})
}

// TestResumeNeedsCoverage: with a bucket span of 4 s (the shortest a
// margin of 1 s allows), an outage that outlasts the coverage of k's
// segment by a TTL (under 6 TTLs): O's check waits rather than resume a hold its segment no
// longer covers (doc_outage.go, O6), though the record credits the
// outage. Without the coverage condition O would resume.
func TestResumeNeedsCoverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace, func(c *queue.Config) { c.Span = 4 * c.Margin })
		time.Sleep(100 * time.Millisecond)
		end := sc.o.CoverEnd("k")
		sc.outage(end.Sub(sc.mem.ServerTime().Latest) + sceneTTL)
		sc.suspend()
		v, _, why := sc.check()
		if v != queue.ResumeWait || !sc.lease.Suspended() || !strings.Contains(why.Error(), "coverage") {
			t.Fatalf("O's check with k's coverage over = %v (%v); want it waiting on the coverage", v, why)
		}
	})
}

// TestResumeAfterAResetElsewhere: O's engine finds, during the outage,
// that the store lost another key's history (j's claim it knew is gone:
// ErrReset), and so forgets every key it knew, k's coverage included
// (doc_types.go, I1). O's check then reads k's coverage again from the
// store and resumes, as after any store-wide outage. Before, it waited
// on a coverage it would never learn again until the record of up-time
// proved the session dead, and the hold the outage had not ended was
// lost (the public-API simulation's relock violations: "the coverage of
// m0 is not known to last").
func TestResumeAfterAResetElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		cj, err := sc.o.Claim(sc.ctx, "j", "O", sc.so, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		sc.suspend()
		sc.mem.DeleteNow(queue.ClaimID("j", cj.Epoch)) // j's history, as O knew it, is lost
		if again, err := sc.o.Claim(sc.ctx, "j", "O", sc.so, queue.ExclusiveTerms, false); err == nil {
			_, _, err = sc.o.Walk(sc.ctx, again)
			if !errors.Is(err, queue.ErrReset) {
				t.Fatalf("O's walk of j after its history was lost = %v; want ErrReset", err)
			}
		} else if !errors.Is(err, queue.ErrReset) {
			t.Fatalf("O's claim of j after its history was lost = %v; want ErrReset", err)
		}
		if end := sc.o.CoverEnd("k"); !end.IsZero() {
			t.Fatalf("O still knows k's coverage (%v) after the reset; the scene needs it forgotten", end)
		}
		v, _, why := sc.check()
		if v != queue.ResumeResumed {
			t.Fatalf("O's check after a reset of another key = %v (%v); want it resumed", v, why)
		}
		if end := sc.o.CoverEnd("k"); end.IsZero() {
			t.Error("O resumed without knowing k's coverage")
		}
	})
}

// TestResumeWaitsForUnmarked: a session document unexpired since the
// outage that keeps no record of up-time (one of a dsync that keeps none,
// whose waiters judge by expiry alone) keeps O's check from resuming: it
// waits, the lease suspended. Without that condition O would resume.
func TestResumeWaitsForUnmarked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		sc.suspend()
		old := queue.Session{ID: "older-dsync", ExpiresAt: sc.mem.ServerTime().Latest.Add(sceneTTL)}
		if err := sc.mem.InsertSession(sc.ctx, old); err != nil {
			t.Fatal(err)
		}
		if v, _, why := sc.check(); v != queue.ResumeWait || !sc.lease.Suspended() {
			t.Fatalf("O's check with a session keeping no record = %v (%v); want it waiting", v, why)
		}
	})
}

// TestSuspendNeedsGrace: an engine without an outage grace suspends
// nothing (its caller retires the lease), nor does one with a grace for a
// lease that is not suspended; a lease before its deadline is neither
// suspended nor resumed.
func TestSuspendNeedsGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, grace := range []time.Duration{0, sceneGrace} {
			sc := newOutageScene(t, grace, grace, true)
			now := sc.clock.Mono()
			lease, _ := queue.NewLease(sceneTTL, sceneTTL/3, now, now)
			if lease.Suspend(now) || lease.Resume(now, now) {
				t.Error("a lease before its deadline was suspended, or resumed unsuspended")
			}
			if _, err := sc.o.Suspend(sc.so, lease, []queue.Ref{sc.co.Ref}); err == nil {
				t.Errorf("Suspend of a lease not suspended, grace %v, succeeded", grace)
			}
			time.Sleep(sceneTTL)
			if !lease.Suspend(sc.clock.Mono()) {
				t.Fatal("a lease past its deadline was not suspended")
			}
			if _, err := sc.o.Suspend(sc.so, lease, []queue.Ref{sc.co.Ref}); (err == nil) != (grace > 0) {
				t.Errorf("Suspend with grace %v: %v", grace, err)
			}
		}
	})
}

// TestReaderRemembersSuspendedDead: a reader (as a Client's Queue reads)
// that found O's claim expired, O cut off alone while R renewed, keeps
// reporting it expired after O, suspended, renews its session again
// (raising its expiry) more than two TTLs past the expiry it found: for
// the grace longer, as long as a suspended owner may renew before its
// check finds it dead. Remembered two TTLs only, the read after O's
// renewal would report the claim live again, and a reader that named W
// holding would name O's claim holding after it.
func TestReaderRemembersSuspendedDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		r, rs := sc.thirdProcess()
		renewR := func() {
			if found, _, err := r.RenewSession(sc.ctx, rs, sceneTTL); err != nil || !found {
				t.Fatalf("R's renewal = %v, %v", found, err)
			}
		}
		exp := sc.oExpiry()
		sc.po.SetReachable(false)
		for !sc.readRemembered() {
			renewR()
			time.Sleep(sceneTTL / 3)
		}
		for time.Now().Before(exp.Add(2*sceneTTL + 100*time.Millisecond)) {
			renewR()
			time.Sleep(sceneTTL / 3)
		}
		sc.po.SetReachable(true)
		sc.suspend()
		sc.renew(true) // the suspended owner's renewal, before its check
		if got := sc.oExpiry(); !got.After(exp.Add(2 * sceneTTL)) {
			t.Fatalf("O's expiry after its renewal = %v; want past %v", got, exp.Add(2*sceneTTL))
		}
		if !sc.readRemembered() {
			t.Error("a reader that found O's claim expired reads it live again after O's suspended session renewed")
		}
	})
}

// readRemembered reports whether W's engine, reading as a Client's Queue
// does and remembering its verdicts, finds O's claim expired.
func (sc *resumeScene) readRemembered() bool { return sc.read(true) }

// TestMarkDeadOnlyRetiredAndResent: MarkDead refuses a lease not
// retired (its owner still trusts the session: a marker would end a claim
// it may resume); a marker whose insert fails is left to the end queue,
// and Flush lands it once the store is back.
func TestMarkDeadOnlyRetiredAndResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		sc.suspend()
		if err := sc.sus.MarkDead(sc.ctx, sc.lease); err == nil || sc.oEnd() != "" {
			t.Fatalf("MarkDead of a suspended lease = %v, O's claim's end %q; want it refused", err, sc.oEnd())
		}
		sc.lease.Retire()
		sc.po.SetReachable(false)
		if err := sc.sus.MarkDead(sc.ctx, sc.lease); err == nil || sc.o.Pending() != 1 {
			t.Fatalf("MarkDead cut off = %v, %d pending; want an error, 1 pending", err, sc.o.Pending())
		}
		sc.po.SetReachable(true)
		if n, err := sc.o.Flush(sc.ctx); err != nil || n != 0 || sc.oEnd() != queue.KindDead {
			t.Fatalf("Flush = %d, %v, O's claim's end %q; want it landed, dead", n, err, sc.oEnd())
		}
	})
}

// TestMarkDeadWakesWaiters: each dead marker MarkDead lands is told to
// the OnLanded hook, as every other end that lands, so that the claim's
// waiters are woken: the session's stored expiry may have risen past the
// outage (a renewal of the suspended session), and a waiter not woken
// looked again only then (the public-API simulation's outage seed 491: a
// holder cut off alone replaced past the failover bound).
func TestMarkDeadWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		var landed []queue.Doc
		sc.o.OnLanded(func(d queue.Doc) { landed = append(landed, d) })
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		sc.suspend()
		sc.lease.Retire()
		if err := sc.sus.MarkDead(sc.ctx, sc.lease); err != nil {
			t.Fatal(err)
		}
		if len(landed) != 1 || landed[0].Kind != queue.KindDead || sc.oEnd() != queue.KindDead {
			t.Fatalf("MarkDead landed O's claim's end %q and told the hook %+v; want its dead marker told once", sc.oEnd(), landed)
		}
	})
}

// thirdProcess starts R, a third process with a grace, and opens its
// session: a process that renews while O is cut off alone.
func (sc *resumeScene) thirdProcess() (*queue.Engine, string) {
	sc.t.Helper()
	r := graceEngine(sc.t, sc.mem.Process(), sc.clock, sceneGrace)
	rs, _, err := r.OpenSession(sc.ctx, sceneTTL)
	if err != nil {
		sc.t.Fatal(err)
	}
	return r, rs
}
