package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestClaimWaiter: a claim made for a lock set (ClaimIn) names the set in
// its Ref and its stored document, and a claim found blocking a waiter,
// by a walk or by a try, carries its set to the waiter (Blocker.Waiter):
// the edge a deadlock detector follows. A claim of a single primitive
// stores no set, and blocks with none.
func TestClaimWaiter(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	engine := func() (*queue.Engine, string) {
		t.Helper()
		e, err := queue.New(store, fixedClock{}, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return e, sess
	}
	stored := func(e *queue.Engine, c *queue.Claim) string {
		t.Helper()
		d, found, err := e.ReadClaim(ctx, c.Key, c.Epoch)
		if err != nil || !found {
			t.Fatalf("ReadClaim(%q, %d) = %v, %v", c.Key, c.Epoch, found, err)
		}
		return d.Waiter
	}
	blockedBy := func(e *queue.Engine, c *queue.Claim) queue.Blocker {
		t.Helper()
		head, b, err := e.Walk(ctx, c)
		if err != nil || head {
			t.Fatalf("walk of %d behind a live claim = %v, %v", c.Epoch, head, err)
		}
		return b
	}
	a, sa := engine()
	b, sb := engine()

	for _, tc := range []struct{ name, holder, waiter string }{
		{"sets", "S1", "S2"},
		{"a set behind a single", "", "S2"},
		{"a single behind a set", "S1", ""},
		{"singles", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "k/" + tc.name
			ca, err := a.ClaimIn(ctx, key, "a", sa, tc.holder, queue.ExclusiveTerms, false)
			if err != nil {
				t.Fatal(err)
			}
			if head, _, err := a.Walk(ctx, ca); err != nil || !head {
				t.Fatalf("a's walk = %v, %v", head, err)
			}
			if ca.Waiter != tc.holder || stored(a, ca) != tc.holder {
				t.Errorf("a's claim names set %q, stores %q; want %q", ca.Waiter, stored(a, ca), tc.holder)
			}
			_, err = b.TryClaimIn(ctx, key, "b", sb, tc.waiter, queue.ExclusiveTerms)
			if busy := (*queue.BusyError)(nil); !errors.As(err, &busy) || busy.Blocker.Epoch != ca.Epoch || busy.Blocker.Waiter != tc.holder {
				t.Errorf("b's try = %v (%+v); want busy, blocked by epoch %d of set %q", err, busy, ca.Epoch, tc.holder)
			}
			cb, err := b.ClaimIn(ctx, key, "b", sb, tc.waiter, queue.ExclusiveTerms, false)
			if err != nil {
				t.Fatal(err)
			}
			if cb.Waiter != tc.waiter || stored(b, cb) != tc.waiter {
				t.Errorf("b's claim names set %q, stores %q; want %q", cb.Waiter, stored(b, cb), tc.waiter)
			}
			if bl := blockedBy(b, cb); bl.Epoch != ca.Epoch || bl.Owner != "a" || bl.Waiter != tc.holder {
				t.Errorf("b is blocked by %+v; want a's epoch %d of set %q", bl, ca.Epoch, tc.holder)
			}
			// A claim resumed from its Ref keeps its set, and a set's
			// claim holds as any other once the one ahead ends.
			if r := queue.Resume(cb.Ref); r.Waiter != tc.waiter {
				t.Errorf("Resume lost the set: %q, want %q", r.Waiter, tc.waiter)
			}
			if err := a.End(ctx, ca, true); err != nil {
				t.Fatal(err)
			}
			if head, _, err := b.Walk(ctx, cb); err != nil || !head {
				t.Fatalf("b's walk after a's release = %v, %v", head, err)
			}
			if err := b.End(ctx, cb, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}
