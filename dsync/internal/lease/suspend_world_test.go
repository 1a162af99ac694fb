package lease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The suspension's test world (suspend_test.go): a Keeper whose Env is a
// queue.Engine with an outage grace over the memory store, through one
// process's view of it (memory.Process), so that a test cuts the Keeper's
// process off (an outage of the whole store, when it is the only process
// that writes) while others go on; in a testing/synctest bubble.

const (
	worldTTL   = 2 * time.Second
	worldGrace = 30 * time.Second
)

var (
	errLost      = errors.New("lost")
	errSuspended = errors.New("suspended")
	errGone      = errors.New("gone")
)

// claimHold is a hold of a claim, recording its loss.
type claimHold struct {
	ref queue.Ref
	// anyDeadline: Start ignores the deadline (a hold that breaks its
	// contract, to show the Keeper's own refusal).
	anyDeadline bool

	mu     sync.Mutex
	lost   error
	lostAt time.Time
}

func (h *claimHold) Key() string    { return h.ref.Key }
func (h *claimHold) Ref() queue.Ref { return h.ref }
func (h *claimHold) Start(deadline time.Time) bool {
	return h.anyDeadline || time.Now().Before(deadline)
}
func (h *claimHold) TellLost() {}

func (h *claimHold) MarkLost(reason error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return false
	}
	h.lost, h.lostAt = reason, time.Now()
	return true
}

func (h *claimHold) loss() (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostAt, h.lost
}

// engineTimes is the engine's clock: the store's time, and local time
// from an origin of its own (not the Keeper's: SuspendOn bridges them).
type engineTimes struct {
	s     *memory.Store
	start time.Time
}

func (c engineTimes) ServerNow() queue.Interval { return c.s.ServerTime() }
func (c engineTimes) Mono() time.Duration       { return time.Since(c.start) }

// call is a call of the Keeper's Env, when it was made and what came of it.
type call struct {
	op  string // "probe", "renew"
	at  time.Time
	err error
}

type world struct {
	t    *testing.T
	ctx  context.Context
	mem  *memory.Store
	po   *memory.Process
	eng  *queue.Engine
	k    *Keeper[*claimHold]
	wait func()

	mu      sync.Mutex
	calls   []call
	ops     []string // the store calls of the Keeper's process, in order
	resumed []*claimHold
	// released: the holds whose kept claims the Keeper let go (Release).
	released []*claimHold
	late     time.Duration // how late the replies of renewals come
	// probeLate: how late the replies of GetSession (the probes) come.
	probeLate time.Duration
}

// newWorld starts a Keeper with outage grace grace (engine and Keeper
// alike); its Env has Suspend and Probe set whatever the grace.
func newWorld(t *testing.T, grace time.Duration) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), mem: memory.New()}
	w.po = w.mem.Process()
	view := w.po.Intercept(func(_ context.Context, c memory.Call, serve func() error) error {
		w.mu.Lock()
		w.ops = append(w.ops, c.Op)
		late, probeLate := w.late, w.probeLate
		w.mu.Unlock()
		switch {
		case c.Op == "RenewSessionUp" && late > 0:
			err := serve()
			time.Sleep(late)
			return err
		case c.Op == "GetSession" && probeLate > 0:
			err := serve()
			time.Sleep(probeLate)
			return err
		}
		return nil
	})
	cfg := queue.DefaultConfig()
	cfg.OutageGrace = grace
	eng, err := queue.New(view, engineTimes{w.mem, time.Now().Add(-time.Minute)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.eng = eng
	var wg sync.WaitGroup
	p := Params{TTL: worldTTL, Grace: grace, Clock: testClock{}}
	if err := p.Settle(); err != nil {
		t.Fatal(err)
	}
	env := Env[*claimHold]{
		Open: func(ctx context.Context, ttl time.Duration) (string, error) {
			id, _, err := eng.OpenSession(ctx, ttl)
			return id, err
		},
		Renew: func(ctx context.Context, id string, ttl time.Duration) error {
			found, _, err := eng.RenewSession(ctx, id, ttl)
			if err == nil && !found {
				err = errGone
			}
			w.note("renew", err)
			return err
		},
		CoverEnd:     eng.CoverEnd,
		Refresh:      eng.Refresh,
		Span:         eng.Span,
		ServerLatest: func() time.Time { return w.mem.ServerTime().Latest },
		Go:           func(f func()) { wg.Go(f) },
		Logger:       slog.New(slog.DiscardHandler),
		Renewed:      func(time.Duration, time.Duration) {},
		Outcome:      func(bool) {},
		RenewFailed:  func([]*claimHold, error, slog.Level) {},
		RefreshFailed: func([]*claimHold, error) {
		},
		Suspend: eng.SuspendOn,
		Probe: func(ctx context.Context, id string) error {
			_, _, err := view.GetSession(ctx, id)
			w.note("probe", err)
			return err
		},
		Release: func(h *claimHold) {
			w.mu.Lock()
			w.released = append(w.released, h)
			w.mu.Unlock()
		},
		Resumed: func(_ string, holds []*claimHold, _ time.Time) {
			w.mu.Lock()
			w.resumed = append(w.resumed, holds...)
			w.mu.Unlock()
		},
		Errors: Errors{Lost: errLost, Closed: errors.New("closed"), Revoked: errors.New("revoked"), Gone: errGone,
			Suspended: errSuspended, Ended: func(error) bool { return false }},
	}
	w.k = New(p, env)
	w.wait = func() {
		w.k.Close(errors.New("closed"))
		wg.Wait()
	}
	return w
}

func (w *world) note(op string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, call{op, time.Now(), err})
}

// callsSince returns the Env calls made at or after t.
func (w *world) callsSince(t time.Time) []call {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []call
	for _, c := range w.calls {
		if !c.at.Before(t) {
			out = append(out, c)
		}
	}
	return out
}

// opsMark returns how many store calls the Keeper's process made so far.
func (w *world) opsMark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ops)
}

// opsFrom returns the store calls made since mark.
func (w *world) opsFrom(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ops[mark:]...)
}

// hold enters the Keeper's session, claims key in it and joins the hold.
func (w *world) hold(key string) (*claimHold, *Session[*claimHold]) {
	w.t.Helper()
	s, err := w.k.Enter(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := w.eng.Claim(w.ctx, key, "O", s.ID(), queue.ExclusiveTerms, false)
	if err != nil {
		w.t.Fatal(err)
	}
	if head, _, err := w.eng.Walk(w.ctx, c); err != nil || !head {
		w.t.Fatalf("the claim of %s = %v, %v; want it holding", key, head, err)
	}
	h := &claimHold{ref: c.Ref}
	if !w.k.Join(h, s) {
		w.t.Fatal("the hold did not join its live session")
	}
	return h, s
}

// end returns the kind of the end marker of h's claim ("" if none).
func (w *world) end(h *claimHold) string {
	w.t.Helper()
	m, found, err := w.mem.Get(w.ctx, queue.EndID(h.ref.Key, h.ref.Epoch, h.ref.Nonce))
	if err != nil {
		w.t.Fatal(err)
	}
	if !found {
		return ""
	}
	return m.Kind
}

// sleepUntil sleeps until t (the bubble's clock).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// suspendedNow reports whether s is suspended, neither retired nor relied
// on.
func (w *world) suspendedNow(s *Session[*claimHold]) bool {
	w.k.mu.Lock()
	defer w.k.mu.Unlock()
	return s.sus != nil && !s.retired && s.lease.Suspended()
}

// other starts a process of its own on the store, with a session renewed
// every TTL/3 until stop is closed: its renewals are the record's stamps.
func (w *world) other(stop <-chan struct{}) *sync.WaitGroup {
	w.t.Helper()
	cfg := queue.DefaultConfig()
	cfg.OutageGrace = worldGrace
	e, err := queue.New(w.mem.Process(), engineTimes{w.mem, time.Now()}, cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	id, _, err := e.OpenSession(w.ctx, worldTTL)
	if err != nil {
		w.t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(worldTTL / 3):
			}
			if found, _, err := e.RenewSession(w.ctx, id, worldTTL); err != nil || !found {
				w.t.Errorf("the other process's renewal = %v, %v", found, err)
				return
			}
		}
	})
	return &wg
}
