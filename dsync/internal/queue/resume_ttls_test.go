package queue_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestWaiterEvidenceIsStored: a waiter judges a claim by the outage rule
// on evidence its owner's resume check can read back, whatever their
// TTLs. O (TTL 600 ms, break 300 ms) holds k and is cut off alone; W
// (TTL 1.5 s, break 750 ms) waits and renews with a gap of 500 ms, so
// its stamps are one span under its own break but two under O's, and
// the store has W's newer stamp only as the stamp of W's last renewal
// (its span is merged at W's next renewal). W's walk judges O's claim
// after O's expiry, its dead marker held back until O, back, renewed
// and ran its check. Whatever W decides, O's check must agree: W takes
// k only if O's check finds the session dead, never beside a resumed O.
//
// Before the fix W judged on its stamps as merged in memory (one chain
// over the 500 ms gap: an up-run of O's TTL after O's last renewal, so
// dead), while O's check read the stored record (two chains: not dead)
// and resumed: both held k.
func TestWaiterEvidenceIsStored(t *testing.T) {
	const (
		ttlO  = 600 * time.Millisecond
		ttlW  = 1500 * time.Millisecond
		grace = 30 * time.Second
	)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		clock := storeTimes{mem, time.Now()}
		po, pw := mem.Process(), mem.Process()
		held := make(chan struct{})
		var heldBack bool
		wv := pw.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
			if c.Op == "Insert" && len(c.Docs) == 1 && c.Docs[0].Kind == queue.KindDead {
				heldBack = true
				<-held // lands late: after O's check
			}
			return nil
		})
		o := graceEngine(t, po, clock, grace)
		w := graceEngine(t, wv, clock, grace)
		so, _, err := o.OpenSession(ctx, ttlO)
		if err != nil {
			t.Fatal(err)
		}
		sw, _, err := w.OpenSession(ctx, ttlW)
		if err != nil {
			t.Fatal(err)
		}
		co, err := o.Claim(ctx, "k", "O", so, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		if head, _, err := o.Walk(ctx, co); err != nil || !head {
			t.Fatalf("O's walk = %v, %v; want it holding", head, err)
		}
		cw, err := w.Claim(ctx, "k", "W", sw, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		if head, _, err := w.Walk(ctx, cw); err != nil || head {
			t.Fatalf("W's first walk = %v, %v; want it waiting", head, err)
		}
		renew := func(e *queue.Engine, s string, ttl time.Duration) time.Duration {
			t.Helper()
			found, sent, err := e.RenewSession(ctx, s, ttl)
			if err != nil || !found {
				t.Fatalf("renewal of %s = %v, %v", s, found, err)
			}
			return sent
		}
		lease, ok := queue.NewLease(ttlO, ttlO/3, renew(o, so, ttlO), clock.Mono())
		if !ok {
			t.Fatal("O's lease is not usable at once")
		}
		renew(w, sw, ttlW)

		// O is cut off alone; W renews 200 ms later, then 500 ms after
		// that: a gap above O's break, below W's.
		po.SetReachable(false)
		time.Sleep(200 * time.Millisecond)
		renew(w, sw, ttlW)
		time.Sleep(500 * time.Millisecond)
		renew(w, sw, ttlW)
		time.Sleep(100 * time.Millisecond) // past O's expiry

		// O is back (reachable again) while W's walk judges its claim.
		head, v, why := walkBesideCheck(t, w, o, cw, co, so, lease, clock,
			func() { po.SetReachable(true) }, func() time.Duration { return renew(o, so, ttlO) }, held)
		t.Logf("W's walk: holds %v (its dead marker held back: %v); O's check: %v (%v)", head, heldBack, v, why)
		if head && v == queue.ResumeResumed {
			t.Fatalf("W holds k by a dead marker on O's claim #%d, and O's check resumed that claim: two holders", co.Epoch)
		}
		if !head && v != queue.ResumeResumed {
			t.Errorf("W does not hold k, and O's check did not resume (%v: %v): the record shows no TTL of up-time after O's last renewal", v, why)
		}
	})
}

// walkBesideCheck runs W's walk of its claim cw in a goroutine of its own
// (its dead marker, if it inserts one, waits until release is closed);
// then O comes back (back): O's lease, past its deadline, is suspended,
// a renewal (renewO) is confirmed, and O's check of its claim co in
// session so runs; then release is closed. It returns whether W's walk
// holds, and the check's verdict.
func walkBesideCheck(t *testing.T, w, o *queue.Engine, cw, co *queue.Claim, so string, lease *queue.Lease, clock queue.Times,
	back func(), renewO func() time.Duration, release chan struct{}) (head bool, v queue.ResumeVerdict, why error) {
	t.Helper()
	ctx := context.Background()
	type walked struct {
		head bool
		err  error
	}
	wDone := make(chan walked, 1)
	go func() {
		head, _, err := w.Walk(ctx, cw)
		wDone <- walked{head, err}
	}()
	synctest.Wait()

	back()
	if !lease.Suspend(clock.Mono()) {
		t.Fatalf("O's lease not suspended at %v (deadline %v)", clock.Mono(), lease.Deadline())
	}
	sus, err := o.Suspend(so, lease, []queue.Ref{co.Ref})
	if err != nil {
		t.Fatal(err)
	}
	sent := renewO()
	if ev := lease.Confirm(sent, clock.Mono()); ev != queue.LeaseSuspended {
		t.Fatalf("a suspended lease's Confirm = %v; want LeaseSuspended", ev)
	}
	v, why = sus.Check(ctx, lease, sent)
	close(release)
	r := <-wDone
	if r.err != nil {
		t.Fatalf("W's walk: %v", r.err)
	}
	return r.head, v, why
}
