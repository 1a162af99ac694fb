package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// grantRig is one store and a session in an engine of its own for each
// claim, as processes would have.
type grantRig struct {
	t     *testing.T
	store queue.Store
}

func (g grantRig) claim(owner string, terms queue.Terms) (*queue.Engine, *queue.Claim) {
	g.t.Helper()
	ctx := context.Background()
	e, err := queue.New(g.store, fixedClock{}, queue.DefaultConfig())
	if err != nil {
		g.t.Fatal(err)
	}
	sess, _, err := e.OpenSession(ctx, time.Minute)
	if err != nil {
		g.t.Fatal(err)
	}
	c, err := e.Claim(ctx, "k", owner, sess, terms, false)
	if err != nil {
		g.t.Fatal(err)
	}
	return e, c
}

func (g grantRig) holds(e *queue.Engine, c *queue.Claim) bool {
	g.t.Helper()
	head, _, err := e.Walk(context.Background(), c)
	if err != nil {
		g.t.Fatal(err)
	}
	return head
}

func (g grantRig) release(e *queue.Engine, c *queue.Claim) {
	g.t.Helper()
	if err := e.End(context.Background(), c, true); err != nil {
		g.t.Fatal(err)
	}
}

var (
	shared = queue.Terms{Mode: queue.Shared}
	excl   = queue.ExclusiveTerms
)

func weighted(w int64) queue.Terms { return queue.Terms{Mode: queue.Weighted, Weight: w, Limit: 3} }

// Readers share the key; a writer waits for every reader below it, and a
// reader queued behind a waiting writer waits for the writer.
func TestGrantShared(t *testing.T) {
	g := grantRig{t, memory.New()}
	e1, r1 := g.claim("r1", shared)
	e2, r2 := g.claim("r2", shared)
	ew, w := g.claim("w", excl)
	e3, r3 := g.claim("r3", shared)
	if !g.holds(e1, r1) || !g.holds(e2, r2) {
		t.Fatal("two readers do not share the key")
	}
	if g.holds(ew, w) {
		t.Fatal("a writer holds while readers do")
	}
	if g.holds(e3, r3) {
		t.Fatal("a reader queued behind a waiting writer passed it")
	}
	g.release(e1, r1)
	if g.holds(ew, w) {
		t.Fatal("a writer holds while a reader still does")
	}
	g.release(e2, r2)
	if !g.holds(ew, w) {
		t.Fatal("a writer does not hold once the readers below it ended")
	}
	if g.holds(e3, r3) {
		t.Fatal("a reader holds while the writer below it does")
	}
	g.release(ew, w)
	if !g.holds(e3, r3) {
		t.Fatal("a reader does not hold after the writer below it released")
	}
	if r3.Epoch <= w.Epoch || w.Epoch <= r2.Epoch {
		t.Fatalf("tokens %d, %d, %d: not in queue order", r2.Epoch, w.Epoch, r3.Epoch)
	}
}

// A release of a reader that held with a reader still live below it does
// not tell a writer that everything below has ended; one that held with
// nothing live below does (Clear), and so ends the writer's walk.
func TestGrantSharedReleaseClear(t *testing.T) {
	g := grantRig{t, memory.New()}
	e1, r1 := g.claim("r1", shared)
	e2, r2 := g.claim("r2", shared)
	if !g.holds(e1, r1) || !g.holds(e2, r2) {
		t.Fatal("two readers do not share the key")
	}
	if !r1.Below || r2.Below {
		t.Fatalf("Below: first reader %v, second %v; want true, false", r1.Below, r2.Below)
	}
	g.release(e2, r2) // r1 is still live below it
	ew, w := g.claim("w", excl)
	if g.holds(ew, w) {
		t.Fatal("a writer stopped at the release of a reader that held beside a live one")
	}
	g.release(e1, r1)
	if !g.holds(ew, w) {
		t.Fatal("a writer does not hold once every reader ended")
	}
}

// Weighted claims hold while their weights fit the limit, in queue order.
func TestGrantWeighted(t *testing.T) {
	g := grantRig{t, memory.New()}
	e1, a := g.claim("a", weighted(2))
	e2, b := g.claim("b", weighted(1))
	e3, c := g.claim("c", weighted(1))
	e4, d := g.claim("d", weighted(1))
	if !g.holds(e1, a) || !g.holds(e2, b) {
		t.Fatal("weights 2 and 1 do not fit a limit of 3")
	}
	if g.holds(e3, c) {
		t.Fatal("weights 2, 1 and 1 hold under a limit of 3")
	}
	if g.holds(e4, d) {
		t.Fatal("a claim passed the one below it that waits for room")
	}
	g.release(e1, a)
	if !g.holds(e3, c) || !g.holds(e4, d) {
		t.Fatal("weights 1, 1 and 1 do not fit a limit of 3 once the 2 ended")
	}
	// A weighted release does not end a weighted walk: e's walk must
	// still count b, c and d, all live below it.
	g.release(e2, b)
	e5, f := g.claim("f", weighted(2))
	if g.holds(e5, f) {
		t.Fatal("weight 2 holds beside live weights 1 and 1 under a limit of 3 (it stopped at a release)")
	}
	g.release(e3, c)
	if !g.holds(e5, f) {
		t.Fatal("weight 2 does not hold beside weight 1 under a limit of 3")
	}
	if _, err := e5.Claim(context.Background(), "k", "x", "s", queue.Terms{Mode: queue.Weighted, Weight: 4, Limit: 3}, false); err == nil {
		t.Fatal("a claim heavier than its limit was made")
	}
}

// Weighted claims of different limits take turns: a claim passes only
// live claims of its own limit, so the weighted holds valid at once all
// fit one limit.
func TestGrantWeightedLimits(t *testing.T) {
	g := grantRig{t, memory.New()}
	of := func(w, limit int64) queue.Terms { return queue.Terms{Mode: queue.Weighted, Weight: w, Limit: limit} }
	e1, a := g.claim("a", of(1, 2))
	e2, b := g.claim("b", of(1, 2))
	e3, c := g.claim("c", of(1, 10))
	e4, d := g.claim("d", of(1, 10))
	e5, f := g.claim("f", of(1, 2))
	if !g.holds(e1, a) || !g.holds(e2, b) {
		t.Fatal("weights 1 and 1 do not fit a limit of 2")
	}
	if g.holds(e3, c) {
		t.Fatal("a claim of limit 10 holds beside claims of limit 2 that fill it")
	}
	if g.holds(e4, d) || g.holds(e5, f) {
		t.Fatal("a claim passed a lower one of another limit that waits")
	}
	g.release(e1, a)
	if g.holds(e3, c) {
		t.Fatal("a claim of limit 10 holds beside a live claim of limit 2")
	}
	g.release(e2, b)
	if !g.holds(e3, c) || !g.holds(e4, d) {
		t.Fatal("claims of limit 10 do not share the key once the claims of limit 2 ended")
	}
	if g.holds(e5, f) {
		t.Fatal("a claim of limit 2 holds beside claims of limit 10")
	}
	g.release(e3, c)
	g.release(e4, d)
	if !g.holds(e5, f) {
		t.Fatal("a claim of limit 2 does not hold once the claims of limit 10 ended")
	}
	// A try of another limit than the live top claim's never queues.
	sess, _, err := e1.OpenSession(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var busy *queue.BusyError
	if _, err := e1.TryClaim(context.Background(), "k", "x", sess, of(1, 3)); !errors.As(err, &busy) {
		t.Fatalf("TryClaim of limit 3 while a claim of limit 2 holds = %v, want busy", err)
	}
	if c, err := e1.TryClaim(context.Background(), "k", "y", sess, of(1, 2)); err != nil || c == nil {
		t.Fatalf("TryClaim of limit 2 beside a claim of limit 2 holding weight 1: %v", err)
	}
}

// TryClaim of a reader succeeds while readers hold, and fails while a
// writer holds or waits.
func TestGrantTryShared(t *testing.T) {
	g := grantRig{t, memory.New()}
	ctx := context.Background()
	e1, r1 := g.claim("r1", shared)
	if !g.holds(e1, r1) {
		t.Fatal("a reader on a free key does not hold")
	}
	try := func(owner string, terms queue.Terms) (*queue.Engine, *queue.Claim, error) {
		e, err := queue.New(g.store, fixedClock{}, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.TryClaim(ctx, "k", owner, sess, terms)
		return e, c, err
	}
	e2, r2, err := try("r2", shared)
	if err != nil {
		t.Fatalf("TryClaim of a reader while a reader holds: %v", err)
	}
	var busy *queue.BusyError
	if _, _, err := try("w", excl); !errors.As(err, &busy) {
		t.Fatalf("TryClaim of a writer while readers hold = %v, want busy", err)
	}
	ew, w := g.claim("w", excl) // waits
	if _, _, err := try("r3", shared); !errors.As(err, &busy) {
		t.Fatalf("TryClaim of a reader behind a waiting writer = %v, want busy", err)
	}
	g.release(e1, r1)
	g.release(e2, r2)
	if !g.holds(ew, w) {
		t.Fatal("the writer does not hold once the readers ended")
	}
}

// Queue lists the live claims from the head up: past a release of a
// reader (which does not end a walk), not past a writer's.
func TestQueueWithModes(t *testing.T) {
	g := grantRig{t, memory.New()}
	ctx := context.Background()
	e1, r1 := g.claim("r1", shared)
	e2, r2 := g.claim("r2", shared)
	g.holds(e1, r1)
	g.holds(e2, r2)
	g.release(e2, r2)
	_, w := g.claim("w", excl)
	q, err := e1.Queue(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q[0].Epoch != r1.Epoch || q[1].Epoch != w.Epoch {
		t.Fatalf("queue %+v; want r1 then w", q)
	}
}

// TestHolding: which claims of a queue hold, as dsync status shows them.
func TestHolding(t *testing.T) {
	x := queue.Doc{Mode: queue.Exclusive}
	r := queue.Doc{Mode: queue.Shared}
	w := func(weight, limit int64) queue.Doc {
		return queue.Doc{Mode: queue.Weighted, Weight: weight, Limit: limit}
	}
	for _, tc := range []struct {
		name string
		q    []queue.Doc
		want []bool
	}{
		{"a mutex and its waiters", []queue.Doc{x, x, x}, []bool{true, false, false}},
		{"readers share", []queue.Doc{r, r, r}, []bool{true, true, true}},
		{"a writer waits for readers, and later readers for it", []queue.Doc{r, r, x, r}, []bool{true, true, false, false}},
		{"units up to the limit", []queue.Doc{w(1, 3), w(2, 3), w(1, 3)}, []bool{true, true, false}},
		{"a large request blocks later small ones", []queue.Doc{w(2, 3), w(2, 3), w(1, 3)}, []bool{true, false, false}},
		{"limits take turns", []queue.Doc{w(1, 3), w(1, 2)}, []bool{true, false}},
		{"empty", nil, []bool{}},
	} {
		if got := queue.Holding(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Holding = %v, want %v", tc.name, got, tc.want)
		}
	}
}
