package leader_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"golang.org/x/sync/errgroup"

	"github.com/go-dsync/dsync/leader"
)

// A leader advertises its WithValue value from the start of each term,
// and what it proclaims after: Leader and Observe show it, Rev orders the
// values of a term, and a new term starts from WithValue's again. Only
// the leader may proclaim.
func TestProclaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		a := newElection(t, w.process(t), leader.WithValue("a:8080"))
		b := newElection(t, w.process(t), leader.WithValue("b:8080"))
		defer a.Close()
		defer b.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		obs := b.Observe(ctx)

		lctx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first := <-obs
		if first.ID != a.ID() || first.Value != "a:8080" || first.Rev != 0 {
			t.Fatalf("observed %+v, want a with its WithValue value", first)
		}
		if err := b.Proclaim(ctx, "b:9090"); !errors.Is(err, leader.ErrNotLeader) {
			t.Fatalf("Proclaim by a non-leader = %v, want ErrNotLeader", err)
		}
		for i, v := range []string{"a:9090", "a:9191"} {
			if err := a.Proclaim(ctx, v); err != nil {
				t.Fatal(err)
			}
			info, err := b.Leader(ctx)
			if err != nil || info.Value != v || info.Rev != uint64(i+1) || info.Token != first.Token {
				t.Fatalf("Leader = %+v, %v; want %q, rev %d, token %d", info, err, v, i+1, first.Token)
			}
			seen := <-obs
			if seen.Value != v || seen.Token != first.Token || seen.Rev != uint64(i+1) {
				t.Fatalf("observed %+v after proclaiming %q", seen, v)
			}
			if term, ok := leader.TermOf(lctx); !ok || term.Value != v || term.Token != first.Token {
				t.Fatalf("TermOf = %+v, %v", term, ok)
			}
		}
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Proclaim(ctx, "late"); !errors.Is(err, leader.ErrNotLeader) {
			t.Fatalf("Proclaim after resigning = %v, want ErrNotLeader", err)
		}
		if _, err := b.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		next := <-obs
		if next.ID != b.ID() || next.Value != "b:8080" || next.Token <= first.Token {
			t.Fatalf("observed %+v, want b with its WithValue value", next)
		}
	})
}

// TermOf answers under Run's context and contexts derived from it, with
// the term's token; not elsewhere.
func TestTermOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newElection(t, newWorld().process(t), leader.WithValue("v0"))
		defer e.Close()
		if _, ok := leader.TermOf(context.Background()); ok {
			t.Fatal("TermOf answered outside any term")
		}
		err := e.Run(context.Background(), func(lctx context.Context) error {
			g, gctx := errgroup.WithContext(lctx)
			g.Go(func() error {
				info, ok := leader.TermOf(gctx)
				if !ok || info.Token == 0 || info.Value != "v0" || info.ID != e.ID() {
					t.Errorf("TermOf in an errgroup = %+v, %v", info, ok)
				}
				return nil
			})
			return g.Wait()
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leader.NewElection(newProc(t).c, "x", leader.WithValue(strings.Repeat("x", leader.MaxValueSize+1))); err == nil {
			t.Fatal("WithValue accepted a value over MaxValueSize")
		}
	})
}
