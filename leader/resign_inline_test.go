package leader_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
)

type resignKey struct{}

// releaseWatch is a store that notes whether the release of a lock was
// sent under a context that carries resignKey.
type releaseWatch struct {
	*memory.Store
	releases, underResign atomic.Int32
}

func (s *releaseWatch) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindRelease {
		s.releases.Add(1)
		if ctx.Value(resignKey{}) != nil {
			s.underResign.Add(1)
		}
	}
	return s.Store.Insert(ctx, d)
}

// TestResignReleasesItself: Resign gives the lock up itself, under its
// caller's context, rather than waking the term's watch to do it: the
// next leader waits for that release, as it waits for a Mutex's Unlock.
// After Run's leadership ends, the watch releases (once fn returned).
func TestResignReleasesItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		s := &releaseWatch{Store: w.store}
		p := &proc{c: newClient(t, s), members: w.members}
		e := newElection(t, p)
		defer e.Close()
		lctx, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.WithValue(context.Background(), resignKey{}, true)
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if context.Cause(lctx) != leader.ErrResigned {
			t.Fatalf("cause %v, want ErrResigned", context.Cause(lctx))
		}
		if r, u := s.releases.Load(), s.underResign.Load(); r != 1 || u != 1 {
			t.Fatalf("%d releases, %d of them under Resign's context; want 1 and 1", r, u)
		}
		// A Resign whose context already ended leaves the release to the
		// watch, which sends it whatever that context.
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		ended, cancel := context.WithCancel(ctx)
		cancel()
		_ = e.Resign(ended)
		synctest.Wait()
		if r, u := s.releases.Load(), s.underResign.Load(); r != 2 || u != 1 {
			t.Fatalf("%d releases, %d of them under Resign's context; want 2 and 1", r, u)
		}
	})
}
