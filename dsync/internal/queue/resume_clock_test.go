package queue_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestSuspendOnTheLeaseClock: a lease kept on a clock of its own (a
// keeper's, counting from its own origin: here an hour ahead of the
// engine's) is suspended and resumed on that clock (SuspendOn). Ê is the
// expiry confirmed before the lease's deadline, not that of a renewal
// whose reply came after it (Suspend, comparing the engine's reply times
// with the lease's deadline, counts that one: a higher Ê, which finds dead
// later than a waiter may); and the check resumes only before the
// deadline its renewal gives on the lease's clock: once that clock has
// counted past it (it ran a TTL ahead of the engine's meanwhile), the
// check waits, where judged on the engine's clock it would resume a lease
// already past its deadline.
func TestSuspendOnTheLeaseClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := newResumeScene(t, sceneGrace)
		off := time.Hour
		mono := func() time.Duration { return sc.clock.Mono() + off }
		found, sent, err := sc.o.RenewSession(sc.ctx, sc.so, sceneTTL)
		if err != nil || !found {
			t.Fatalf("O's renewal = %v, %v", found, err)
		}
		lease, ok := queue.NewLease(sceneTTL, sceneTTL/3, sent+off, mono())
		if !ok {
			t.Fatal("the lease is not usable at once")
		}
		before := sc.o.ConfirmedExpiry(sc.so)
		// A renewal sent just before the deadline, its reply after it.
		time.Sleep(lease.Deadline() - mono() - 50*time.Millisecond)
		sc.oLate = 100 * time.Millisecond
		sc.renew(true)
		sc.oLate = 0
		if late := sc.o.ConfirmedExpiry(sc.so); !late.After(before) || mono() < lease.Deadline() {
			t.Fatalf("the late renewal confirmed %v (before: %v) at %v, deadline %v: the test shows nothing", late, before, mono(), lease.Deadline())
		}
		time.Sleep(100 * time.Millisecond)
		sc.outage(3 * sceneTTL)
		if !lease.Suspend(mono()) {
			t.Fatal("the lease past its deadline was not suspended")
		}
		refs := []queue.Ref{sc.co.Ref}
		if wrong, err := sc.o.Suspend(sc.so, lease, refs); err != nil || !wrong.Expiry().After(before) {
			t.Fatalf("Suspend on the engine's clock: Ê %v, %v; want the late renewal's (the hazard SuspendOn removes)", wrong.Expiry(), err)
		}
		sus, err := sc.o.SuspendOn(sc.so, lease, mono, refs)
		if err != nil {
			t.Fatal(err)
		}
		if !sus.Expiry().Equal(before) {
			t.Fatalf("SuspendOn's Ê = %v; want %v, the expiry confirmed before the deadline", sus.Expiry(), before)
		}

		found, sent, err = sc.o.RenewSession(sc.ctx, sc.so, sceneTTL)
		if err != nil || !found {
			t.Fatalf("O's renewal after the outage = %v, %v", found, err)
		}
		lsent := sent + off
		if ev := lease.Confirm(lsent, mono()); ev != queue.LeaseSuspended {
			t.Fatalf("Confirm = %v; want LeaseSuspended", ev)
		}
		off += sceneTTL // the lease's clock counts a TTL the engine's does not
		if v, why := sus.Check(sc.ctx, lease, lsent); v != queue.ResumeWait || !lease.Suspended() {
			t.Fatalf("check past its renewal's deadline on the lease's clock = %v (%v); want it waiting, suspended", v, why)
		}
		found, sent, err = sc.o.RenewSession(sc.ctx, sc.so, sceneTTL)
		if err != nil || !found {
			t.Fatalf("O's second renewal = %v, %v", found, err)
		}
		lsent = sent + off
		if v, why := sus.Check(sc.ctx, lease, lsent); v != queue.ResumeResumed {
			t.Fatalf("check in time on the lease's clock = %v (%v); want it resumed", v, why)
		}
		if want := lsent + sceneTTL - sceneTTL/20; lease.Deadline() != want {
			t.Errorf("the resumed deadline = %v; want %v, on the lease's clock", lease.Deadline(), want)
		}
	})
}
