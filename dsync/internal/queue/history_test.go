package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// testClock is the store's time, known exactly, and the local clock, both
// moved by the test.
type testClock struct {
	mu   sync.Mutex
	base time.Time
	now  time.Duration
}

func (c *testClock) ServerNow() queue.Interval {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.base.Add(c.now)
	return queue.Interval{Earliest: t, Latest: t}
}

func (c *testClock) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// set moves both clocks to store time t.
func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.Sub(c.base)
}

// heldGates is a link on which gate inserts are held back while armed:
// their sender learns nothing, and they land when the test says.
type heldGates struct {
	*memory.Store
	mu    sync.Mutex
	armed bool
	held  []queue.Doc
}

func (h *heldGates) Insert(ctx context.Context, d queue.Doc) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.armed && d.Kind == queue.KindGate {
		h.held = append(h.held, d)
		return errors.New("no reply in time")
	}
	return h.Store.Insert(ctx, d)
}

func (h *heldGates) InsertEach(ctx context.Context, docs []queue.Doc) []error {
	errs := make([]error, len(docs))
	for i, d := range docs {
		errs[i] = h.Insert(ctx, d)
	}
	return errs
}

// TestRefreshHeldBackAcrossAnEmptying (issue 42): a reader's refresh of
// its segment's gates, with no floor (it never held with every lower claim
// ended), is held back; the segment lapses, Q starts another and holds;
// the store is emptied while nothing is held, and the refresh lands,
// covering the old segment again. R, which never saw the key, must not
// hold in it: its token would lie below Q's, handed out before the
// emptying. It is told the key is busy until the stray gate's coverage
// is over, and then starts a segment above Q's.
func TestRefreshHeldBackAcrossAnEmptying(t *testing.T) {
	ctx := context.Background()
	cfg := queue.DefaultConfig()
	span := cfg.Span
	// Buckets of five minutes start at multiples of it, as 2026-01-01 does.
	b0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &testClock{base: b0}
	at := func(buckets int, d time.Duration) { clock.set(b0.Add(time.Duration(buckets)*span + d)) }
	store := memory.New()
	link := &heldGates{Store: store}
	engine := func(s queue.Store) (*queue.Engine, string) {
		e, err := queue.New(s, clock, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Agree(ctx, false); err != nil {
			t.Fatal(err)
		}
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return e, sess
	}
	holds := func(e *queue.Engine, c *queue.Claim) {
		t.Helper()
		if head, _, err := e.Walk(ctx, c); err != nil || !head {
			t.Fatalf("Walk of epoch %d = %v, %v; want it holding", c.Epoch, head, err)
		}
	}
	shared := queue.Terms{Mode: queue.Shared}

	at(0, 10*time.Second)
	x, sx := engine(store)
	cx, err := x.Claim(ctx, "k", "x", sx, shared, false) // starts the segment
	if err != nil {
		t.Fatal(err)
	}
	holds(x, cx)
	at(0, 11*time.Second)
	y, sy := engine(link)
	cy, err := y.Claim(ctx, "k", "y", sy, shared, false) // joins it, beside x
	if err != nil {
		t.Fatal(err)
	}
	holds(y, cy)
	if err := x.End(ctx, cx, true); err != nil {
		t.Fatal(err)
	}
	// Next bucket: y refreshes; its gate, with no floor, is held back.
	at(1, time.Second)
	link.mu.Lock()
	link.armed = true
	link.mu.Unlock()
	if _, err := y.Refresh(ctx, []string{"k"}); err == nil {
		t.Fatal("the refresh held back reported success")
	}
	if err := y.End(ctx, cy, true); err != nil {
		t.Fatal(err)
	}

	// The segment lapsed: Q starts another, and holds.
	at(3, time.Second)
	q, sq := engine(store)
	cq, err := q.Claim(ctx, "k", "q", sq, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatal(err)
	}
	holds(q, cq)
	if err := q.End(ctx, cq, true); err != nil {
		t.Fatal(err)
	}

	at(3, 3*time.Second)
	store.Reset() // nothing is held
	link.mu.Lock()
	if len(link.held) != 1 {
		t.Fatalf("%d gates held back, want 1", len(link.held))
	}
	if err := store.Insert(ctx, link.held[0]); err != nil {
		t.Fatal(err)
	}
	link.mu.Unlock()

	at(3, 4*time.Second)
	r, sr := engine(store)
	var busy *queue.BusyError
	for i := 0; ; i++ {
		cr, err := r.TryClaim(ctx, "k", "r", sr, queue.ExclusiveTerms)
		if err == nil {
			if cr.Epoch <= cq.Epoch {
				t.Fatalf("R holds with token %d, not above Q's %d, handed out before the emptying", cr.Epoch, cq.Epoch)
			}
			t.Logf("R holds with token %d above Q's %d after %d tries, 10 s apart", cr.Epoch, cq.Epoch, i)
			return
		}
		if !errors.As(err, &busy) || i == 60 {
			t.Fatalf("R's TryClaim, try %d: %v", i, err)
		}
		clock.set(clock.ServerNow().Latest.Add(10 * time.Second))
	}
}

// compactHook runs hook once, after a Compact has been applied.
type compactHook struct {
	*memory.Store
	hook func()
}

func newCompactHook(store *memory.Store) *compactHook {
	c := &compactHook{}
	c.Store = store.Intercept(func(_ context.Context, call memory.Call, serve func() error) error {
		if h := c.hook; h != nil && call.Op == "Compact" {
			c.hook = nil
			err := serve()
			h()
			return err
		}
		return nil
	})
	return c
}

// TestSweepAcrossAnEmptyingKeepsAnotherSpansGates: a sweep of a process
// with buckets of a minute begins; meanwhile the store is emptied, and a
// process with buckets of five minutes records its span and starts a
// segment. The sweep must not drop that segment's gates: their numbers,
// five times smaller, lie below the sweeper's bucket, and a start that
// no longer meets them would hold beside the segment.
func TestSweepAcrossAnEmptyingKeepsAnotherSpansGates(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	link := newCompactHook(store)
	cfg := queue.DefaultConfig()
	cfg.Span = time.Minute
	sweeper, err := queue.New(link, fixedClock{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sweeper.Agree(ctx, true); err != nil {
		t.Fatal(err)
	}
	other, err := queue.New(store, fixedClock{}, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var gate string
	link.hook = func() {
		store.Reset() // nothing held
		if err := other.Agree(ctx, true); err != nil {
			t.Fatal(err)
		}
		sess, _, err := other.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		c, err := other.Claim(ctx, "k", "other", sess, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		if head, _, err := other.Walk(ctx, c); err != nil || !head {
			t.Fatalf("the other span's claim: %v, %v; want it holding", head, err)
		}
		gate = queue.GateID("k", fixedClock{}.ServerNow().Latest.UnixNano()/int64(5*time.Minute))
	}
	// The sweep may fail (the store's span is no longer the sweeper's),
	// but must not drop the other span's gates.
	if _, err := sweeper.Sweep(ctx, 4*time.Minute); err != nil && !errors.Is(err, queue.ErrSpan) {
		t.Fatal(err)
	}
	if _, found, err := store.Get(ctx, gate); err != nil || !found {
		t.Fatalf("the gate %s of the segment the other span holds in: found %v, %v; want it kept", gate, found, err)
	}
}

// lateDrop is a link on which a DropGates is held back: its sender
// learns nothing, and it lands when the test calls land.
type lateDrop struct {
	*memory.Store
	land func() error
}

func newLateDrop(store *memory.Store) *lateDrop {
	l := &lateDrop{}
	l.Store = store.Intercept(func(_ context.Context, c memory.Call, serve func() error) error {
		if c.Op != "DropGates" {
			return nil
		}
		l.land = serve
		return errors.New("no reply in time")
	})
	return l
}

// TestLateDropKeepsAnotherSpansGates: a sweep of a process with buckets
// of a minute reads the store's history, finds it its own, and sends its
// drop of old gates, which the network holds back (rule 11: a write may
// land late). Meanwhile the store is emptied, and a process with buckets
// of five minutes records its span and starts a segment. The drop that
// lands then must spare that segment's gates, whose numbers lie below
// the sweeper's bucket: a start that no longer met them would hold
// beside the segment (apisim, seed 387: two runs of a Once's function at
// once).
func TestLateDropKeepsAnotherSpansGates(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &testClock{base: start}
	store := memory.New()
	link := newLateDrop(store)
	cfg := queue.DefaultConfig()
	cfg.Span = time.Minute
	sweeper, err := queue.New(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sweeper.Agree(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := sweeper.Sweep(ctx, 4*time.Minute); err == nil || link.land == nil {
		t.Fatalf("Sweep = %v with the drop held back (sent: %v); want its error", err, link.land != nil)
	}

	clock.set(start.Add(2 * time.Second))
	store.Reset() // nothing held
	other, err := queue.New(store, clock, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Agree(ctx, true); err != nil {
		t.Fatal(err)
	}
	sess, _, err := other.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c, err := other.Claim(ctx, "k", "other", sess, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatal(err)
	}
	if head, _, err := other.Walk(ctx, c); err != nil || !head {
		t.Fatalf("the other span's claim: %v, %v; want it holding", head, err)
	}
	gate := queue.GateID("k", clock.ServerNow().Latest.UnixNano()/int64(5*time.Minute))
	if _, found, err := store.Get(ctx, gate); err != nil || !found {
		t.Fatalf("the gate %s of the other span's segment: found %v, %v; want it there before the drop lands", gate, found, err)
	}

	clock.set(start.Add(3 * time.Second))
	link.land()
	if _, found, err := store.Get(ctx, gate); err != nil || !found {
		t.Fatalf("the gate %s of the segment the other span holds in: found %v, %v after the sweeper's drop landed late; want it kept", gate, found, err)
	}
}
