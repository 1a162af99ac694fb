package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// spanWorld is a store and its clock, at 10 s past the start of 2026 (a
// bucket boundary for every span the stories use), shared by engines of
// any bucket span: the stories of processes that disagree on the span
// across an emptying (refresh_history_test.go).
type spanWorld struct {
	t     *testing.T
	ctx   context.Context
	b0    time.Time
	clock *testClock
	store *memory.Store
}

func newSpanWorld(t *testing.T) *spanWorld {
	b0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &testClock{base: b0}
	clock.set(b0.Add(10 * time.Second))
	return &spanWorld{t: t, ctx: context.Background(), b0: b0, clock: clock, store: memory.New()}
}

// engine returns an engine of span that has agreed on it (Fixed) and a
// session of 30 s.
func (w *spanWorld) engine(span time.Duration) (*queue.Engine, string) {
	w.t.Helper()
	return w.engineWith(w.store, w.clock, span)
}

// engineWith is engine, with the engine's requests going through store
// (which wraps w.store) and its times read from clock.
func (w *spanWorld) engineWith(store queue.Store, clock queue.Times, span time.Duration) (*queue.Engine, string) {
	w.t.Helper()
	cfg := queue.DefaultConfig()
	cfg.Span = span
	e, err := queue.New(store, clock, cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := e.Agree(w.ctx, true); err != nil {
		w.t.Fatal(err)
	}
	sess, _, err := e.OpenSession(w.ctx, 30*time.Second)
	if err != nil {
		w.t.Fatal(err)
	}
	return e, sess
}

// hold claims k for owner exclusively, and fails the test unless the
// claim holds at its first walk.
func (w *spanWorld) hold(e *queue.Engine, sess, owner string) *queue.Claim {
	w.t.Helper()
	c, err := e.Claim(w.ctx, "k", owner, sess, queue.ExclusiveTerms, false)
	if err != nil {
		w.t.Fatalf("%s's claim: %v", owner, err)
	}
	if head, _, err := e.Walk(w.ctx, c); err != nil || !head {
		w.t.Fatalf("%s's walk of epoch %d = %v, %v; want it holding", owner, c.Epoch, head, err)
	}
	return c
}

// staleAcrossAnEmptying is the opening of the span stories: X (spanX)
// holds and releases k, and keeps what it knows of k's segment; the store
// is emptied while nothing is held, and Y (spanY) records its span and
// starts k at the same store time, so its segment has X's number, and
// holds and releases. It returns X and its session.
func (w *spanWorld) staleAcrossAnEmptying(spanX, spanY time.Duration) (*queue.Engine, string) {
	w.t.Helper()
	x, sx := w.engine(spanX)
	cx := w.hold(x, sx, "x")
	if err := x.End(w.ctx, cx, true); err != nil {
		w.t.Fatal(err)
	}
	w.store.Reset() // nothing is held
	y, sy := w.engine(spanY)
	cy := w.hold(y, sy, "y")
	if cy.Seg != cx.Seg {
		w.t.Fatalf("Y started segment %d, X's was %d: the test no longer makes them meet", cy.Seg, cx.Seg)
	}
	if err := y.End(w.ctx, cy, true); err != nil {
		w.t.Fatal(err)
	}
	return x, sx
}

// emptyAndStartK empties the store (nothing may hold) and has a new
// engine Y, of span one minute, start k, hold and release: in the same
// quantum of store time as claim before (X's), so that Y's segment has
// its number. It returns Y and its claim.
func (w *spanWorld) emptyAndStartK(before *queue.Claim) (*queue.Engine, *queue.Claim) {
	w.t.Helper()
	w.store.Reset()
	y, sy := w.engine(time.Minute)
	cy := w.hold(y, sy, "y")
	if cy.Seg != before.Seg {
		w.t.Fatalf("Y started segment %d, X's was %d: the test no longer makes them meet", cy.Seg, before.Seg)
	}
	if err := y.End(w.ctx, cy, true); err != nil {
		w.t.Fatal(err)
	}
	return y, cy
}
