package leader_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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

// TestResignReleasesItselfWhenTheWatchWakes: Resign's own release is the
// one sent even when the term's watch, woken by the term's end, runs
// before Resign releases (the hook lets it run to a stop there).
func TestResignReleasesItselfWhenTheWatchWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		s := &releaseWatch{Store: w.store}
		e := newElection(t, &proc{c: newClient(t, s), members: w.members})
		defer e.Close()
		defer leader.SetResignedHook(synctest.Wait)()
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx := context.WithValue(context.Background(), resignKey{}, true)
		if err := e.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if r, u := s.releases.Load(), s.underResign.Load(); r != 1 || u != 1 {
			t.Fatalf("%d releases, %d of them under Resign's context; want 1 and 1", r, u)
		}
	})
}

// stalledReleases is a store whose releases wait until unstall closes,
// whatever their context; stalled closes as the first one starts.
type stalledReleases struct {
	*memory.Store
	stalled, unstall chan struct{}
	once             sync.Once
}

func (s *stalledReleases) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindRelease {
		s.once.Do(func() { close(s.stalled) })
		<-s.unstall
	}
	return s.Store.Insert(ctx, d)
}

// TestResignWhileTheWatchReleases: a Resign that comes while the term's
// watch is giving the lock up (its parent context ended) returns when
// its context ends, without waiting for that release. The public-API
// simulation (integration/apisim) hung there when Resign waited for the
// watch's release under a sync.Once. In real time: a goroutine blocked
// on a mutex would keep a synctest bubble's clock from moving.
func TestResignWhileTheWatchReleases(t *testing.T) {
	w := newWorld()
	s := &stalledReleases{Store: w.store, stalled: make(chan struct{}), unstall: make(chan struct{})}
	e := newElection(t, &proc{c: newClient(t, s), members: w.members})
	defer e.Close()
	defer close(s.unstall)
	parent, end := context.WithCancel(context.Background())
	if _, err := e.Campaign(parent); err != nil {
		t.Fatal(err)
	}
	end() // the watch gives the lock up: its release stalls
	<-s.stalled
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	resigned := make(chan error, 1)
	go func() { resigned <- e.Resign(ctx) }()
	select {
	case err := <-resigned:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Resign returned %v, want its context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Resign did not return when its context ended, while the watch's release stalled")
	}
}
