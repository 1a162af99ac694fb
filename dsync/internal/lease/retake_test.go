package lease

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Kept claims (retake.go), in the world of suspend_world_test.go.

// outage cuts the Keeper's process off the store from s's deadline for
// two TTLs, and returns once the store is back and the Keeper is done
// with it: s resumed, if its check allows.
func (w *world) outage(s *Session[*claimHold]) {
	w.t.Helper()
	d := w.suspendAtDeadline(s)
	if !w.suspendedNow(s) {
		w.t.Fatalf("the session is not suspended at its deadline (retired with %v)", w.k.RetiredWith(s))
	}
	sleepUntil(d.Add(2 * worldTTL))
	w.po.SetReachable(true)
	time.Sleep(quarter)
	synctest.Wait()
	if w.suspendedNow(s) || w.k.RetiredWith(s) != nil {
		w.t.Fatalf("after the outage: suspended %v, retired with %v; want it resumed", w.suspendedNow(s), w.k.RetiredWith(s))
	}
}

// TestKeptKeepsTheSessionInUse: a claim that a resume kept keeps its
// session renewed while no hold has taken it over, so that a new hold of
// the claim can take it over up to a TTL after the resume, with no Enter.
// Were the kept hold not counted, the idle session would go unrenewed.
// A TTL after the resume the Keeper lets go a kept claim no hold took
// over, and tells Release; one taken over it leaves alone.
func TestKeptKeepsTheSessionInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		h2, _ := w.hold("k2")
		w.outage(s)
		dl := w.k.Deadline(s)
		time.Sleep(worldTTL * 9 / 10)
		synctest.Wait()
		if got := w.k.Deadline(s); !got.After(dl) || w.k.RetiredWith(s) != nil {
			t.Fatalf("0.9 TTL after the resume: deadline %v (at the resume %v), retired with %v; want the session renewed",
				got, dl, w.k.RetiredWith(s))
		}
		next := &claimHold{ref: h.ref}
		if ok, err := w.k.Retake(h, next, s); !ok || err != nil {
			t.Fatalf("Retake 0.9 TTL after the resume = %v, %v; want the claim taken over", ok, err)
		}
		if ok, err := w.k.Retake(h, &claimHold{ref: h.ref}, s); ok || !errors.Is(err, ErrNotKept) {
			t.Fatalf("a second Retake of the same hold = %v, %v; want ErrNotKept", ok, err)
		}
		time.Sleep(worldTTL / 5)
		synctest.Wait()
		w.mu.Lock()
		released := slices.Clone(w.released)
		w.mu.Unlock()
		if !slices.Equal(released, []*claimHold{h2}) {
			t.Fatalf("a TTL after the resume, Release was told %v; want the kept hold no one took over (%p), only", released, h2)
		}
		if w.k.LetGo(h2) || w.k.LetGo(h) || w.k.Remove(h) {
			t.Fatal("a hold let go or taken over is still kept")
		}
		if end := w.end(h); end != "" {
			t.Fatalf("the claim taken over has ended (%s)", end)
		}
	})
}

// TestKeptWhileSuspendedAgain: a kept claim is part of its session's next
// suspension. While suspended, Retake waits (false, nil) and LetGo leaves
// it kept; after the second resume it is told again, and LetGo lets it
// go (the caller ends it).
func TestKeptWhileSuspendedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		w.outage(s)
		w.suspendAtDeadline(s)
		if !w.suspendedNow(s) {
			t.Fatalf("not suspended at the second deadline (retired with %v)", w.k.RetiredWith(s))
		}
		if ok, err := w.k.Retake(h, &claimHold{ref: h.ref}, s); ok || err != nil {
			t.Fatalf("Retake while suspended = %v, %v; want to wait for the verdict", ok, err)
		}
		if w.k.LetGo(h) {
			t.Fatal("LetGo let a claim of a suspended session go")
		}
		w.mu.Lock()
		w.resumed = nil
		w.mu.Unlock()
		sleepUntil(w.k.Deadline(s).Add(2 * worldTTL))
		w.po.SetReachable(true)
		time.Sleep(quarter)
		synctest.Wait()
		w.mu.Lock()
		told := slices.Clone(w.resumed)
		w.mu.Unlock()
		if !slices.Contains(told, h) {
			t.Fatalf("the second resume told %v; want the kept hold again", told)
		}
		if !w.k.LetGo(h) {
			t.Fatal("LetGo after the second resume did not let the kept claim go")
		}
	})
}

// TestRemoveWhileSuspended: a hold removed while its session is suspended
// (its owner gave it up) is not kept at the resume, which still tells it:
// its claim is live again, and its owner's to end.
func TestRemoveWhileSuspended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		d := w.suspendAtDeadline(s)
		if w.k.Remove(h) {
			t.Fatal("Remove of a suspended session's hold reported it kept")
		}
		sleepUntil(d.Add(2 * worldTTL))
		w.po.SetReachable(true)
		time.Sleep(quarter)
		synctest.Wait()
		if w.suspendedNow(s) || w.k.RetiredWith(s) != nil {
			t.Fatalf("after the outage: suspended %v, retired with %v; want it resumed", w.suspendedNow(s), w.k.RetiredWith(s))
		}
		w.mu.Lock()
		told := slices.Clone(w.resumed)
		w.mu.Unlock()
		if !slices.Equal(told, []*claimHold{h}) {
			t.Fatalf("Resumed was told %v; want the removed hold", told)
		}
		w.mu.Lock()
		released := slices.Clone(w.released)
		w.mu.Unlock()
		if !slices.Equal(released, []*claimHold{h}) {
			t.Fatalf("Release was told %v at the resume; want the removed hold, its claim live again", released)
		}
		if w.k.LetGo(h) {
			t.Fatal("a hold removed while suspended was kept")
		}
	})
}

// TestRetakeAfterRetire: once the session is retired, Retake of its kept
// hold returns why (wrapping Lost), and the hold is no longer kept.
func TestRetakeAfterRetire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, worldGrace)
		defer w.wait()
		h, s := w.hold("k")
		w.outage(s)
		why := errors.Join(errLost, errors.New("revoked"))
		w.k.Retire(s, why)
		if ok, err := w.k.Retake(h, &claimHold{ref: h.ref}, s); ok || err != why {
			t.Fatalf("Retake after the retirement = %v, %v; want the retirement's reason", ok, err)
		}
		if w.k.LetGo(h) || w.k.Remove(h) {
			t.Fatal("a hold of a retired session is still kept")
		}
	})
}
