package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// sessionHookStore is a memory store (with runs) that runs onSession
// once, just before the next session read lands.
type sessionHookStore struct {
	*memory.Store
	onSession func()
}

func (s *sessionHookStore) GetSession(ctx context.Context, id string) (queue.Session, bool, error) {
	if f := s.onSession; f != nil {
		s.onSession = nil
		f()
	}
	return s.Store.GetSession(ctx, id)
}

// TestRestoreAfterRunBeforeSessionRead: R (exclusive) held and
// released, X (exclusive) held by a session nobody renews; a backup; the
// clock passes X's expiry; B claims above X and walks: its run finds its
// own claim, then (the restore lands here) it reads X's session, finds it
// expired, marks X dead and stops at R's release. The run's confirmation
// of B's claim came before the session read: B must read its claim back
// (it is gone) and give up, or D takes B's epoch too.
func TestRestoreAfterRunBeforeSessionRead(t *testing.T) {
	ctx := context.Background()
	clk := &testClock{base: time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)}
	st := &sessionHookStore{Store: memory.New()}
	eng := func() (*queue.Engine, string) {
		e, err := queue.New(st, clk, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return e, s
	}
	claim := func(e *queue.Engine, s, owner string) *queue.Claim {
		c, err := e.Claim(ctx, "k", owner, s, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ea, sa := eng()
	r := claim(ea, sa, "r")
	if h, _, err := ea.Walk(ctx, r); err != nil || !h {
		t.Fatalf("r: %v %v", h, err)
	}
	if err := ea.End(ctx, r, true); err != nil {
		t.Fatal(err)
	}
	ex, sx := eng()
	x := claim(ex, sx, "x")
	if h, _, err := ex.Walk(ctx, x); err != nil || !h {
		t.Fatalf("x: %v %v", h, err)
	}
	backup := st.Snapshot()
	clk.set(clk.base.Add(2 * time.Minute)) // X's session (TTL 1 min, never renewed) has expired
	eb, sb := eng()
	ed, sd := eng()
	b := claim(eb, sb, "b")
	st.onSession = func() { st.Restore(backup) } // lands after B's run, before its session read
	held, _, err := eb.Walk(ctx, b)
	t.Logf("B epoch %d (x %d, r %d): held=%v err=%v", b.Epoch, x.Epoch, r.Epoch, held, err)
	d := claim(ed, sd, "d")
	dh, _, derr := ed.Walk(ctx, d)
	t.Logf("D epoch %d: held=%v err=%v", d.Epoch, dh, derr)
	if held && dh && d.Epoch == b.Epoch {
		t.Fatalf("two holds of epoch %d: B held on a run confirmed before its later session read", b.Epoch)
	}
	if held || !errors.Is(err, queue.ErrReset) {
		t.Fatalf("B: held=%v err=%v, want ErrReset", held, err)
	}
}
