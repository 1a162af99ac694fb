package queue_test

import (
	"context"
	"fmt"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

type fixedClock struct{}

func (fixedClock) ServerNow() queue.Interval {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return queue.Interval{Earliest: t, Latest: t}
}
func (fixedClock) Mono() time.Duration { return 0 }

func TestNewChecksItsArguments(t *testing.T) {
	store := memory.New()
	if _, err := queue.New(store, fixedClock{}, queue.DefaultConfig()); err != nil {
		t.Fatalf("the default configuration is refused: %v", err)
	}
	short := queue.DefaultConfig()
	short.PruneDelay = short.ViewTrust + short.AcquireWindow
	for _, tc := range []struct {
		name  string
		store queue.Store
		clock queue.Times
		cfg   queue.Config
		want  string
	}{
		{"nil store", nil, fixedClock{}, queue.DefaultConfig(), "nil store"},
		{"nil clock", store, nil, queue.DefaultConfig(), "nil store or clock"},
		{"prune delay too short", store, fixedClock{}, short, "PruneDelay"},
		{"zero config", store, fixedClock{}, queue.Config{}, "positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := queue.New(tc.store, tc.clock, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// countingStore counts the claim inserts that met a duplicate key.
type countingStore struct {
	*memory.Store
	dups int
}

func (s *countingStore) InsertOrdered(ctx context.Context, docs []queue.Doc) (int, error) {
	dup, err := s.Store.InsertOrdered(ctx, docs)
	if err == nil && dup == 0 && docs[0].Kind == queue.KindClaim {
		s.dups++
	}
	return dup, err
}

// TestAfterAndReadClaim: a walk that finds its claim holding after a
// release reports the released claim (After), and a claim read by _id
// lets the next Claim insert above it at once.
func TestAfterAndReadClaim(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memory.New()}
	engine := func() *queue.Engine {
		e, err := queue.New(store, fixedClock{}, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b, c := engine(), engine(), engine()
	claim := func(e *queue.Engine, owner string) *queue.Claim {
		t.Helper()
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := e.Claim(ctx, "k", owner, sess, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	ca, cb := claim(a, "a"), claim(b, "b")
	if head, _, err := b.Walk(ctx, cb); err != nil || head {
		t.Fatalf("b's walk behind a's live claim = %v, %v", head, err)
	}
	if _, ok := cb.After(); ok {
		t.Error("After reports a claim before b holds")
	}
	if err := a.End(ctx, ca, true); err != nil {
		t.Fatal(err)
	}
	if head, _, err := b.Walk(ctx, cb); err != nil || !head {
		t.Fatalf("b's walk after a's release = %v, %v", head, err)
	}
	if prev, ok := cb.After(); !ok || prev.Owner != "a" || prev.Epoch != ca.Epoch {
		t.Errorf("After = %+v, %v; want a's claim of epoch %d", prev, ok, ca.Epoch)
	}

	// c queues at the next three epochs behind b; b, having read the
	// last of them, claims the one above at once.
	for range 3 {
		claim(c, "c")
	}
	if err := b.End(ctx, cb, true); err != nil {
		t.Fatal(err)
	}
	last := cb.Epoch + 3
	if d, found, err := b.ReadClaim(ctx, "k", last); err != nil || !found || d.Owner != "c" {
		t.Fatalf("ReadClaim(%d) = %+v, %v, %v", last, d, found, err)
	}
	store.dups = 0
	if cl := claim(b, "b"); cl.Epoch != last+1 || store.dups != 0 {
		t.Errorf("b's claim after reading epoch %d: epoch %d after %d duplicate keys, want %d after none", last, cl.Epoch, store.dups, last+1)
	}
}

// TestKnowledgeOfUnendedClaimsOutlivesTheCache: an engine that learns of
// more keys than it keeps drops what it knows of idle keys only. A claim
// made and not yet ended keeps its key's segment and coverage (its hold
// relies on them: CoverEnd is what a hold checks before it starts), and
// lets go of them once it ends.
func TestKnowledgeOfUnendedClaimsOutlivesTheCache(t *testing.T) {
	ctx := context.Background()
	e, err := queue.New(memory.New(), fixedClock{}, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := e.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const others = 4200 // more keys than the engine keeps (4096)
	lockMany := func(prefix string) {
		t.Helper()
		for i := range others {
			c, err := e.Claim(ctx, fmt.Sprintf("%s-%d", prefix, i), "o", sess, queue.ExclusiveTerms, false)
			if err == nil {
				err = e.End(ctx, c, true)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	kept, err := e.Claim(ctx, "kept", "o", sess, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatal(err)
	}
	before := e.CoverEnd("kept")
	if before.IsZero() {
		t.Fatal("no coverage known of a key just claimed")
	}
	lockMany("a")
	if got := e.CoverEnd("kept"); !got.Equal(before) {
		t.Fatalf("after %d other keys, the coverage of an unended claim's key is %v, want %v", others, got, before)
	}
	if head, _, err := e.Walk(ctx, kept); err != nil || !head {
		t.Fatalf("Walk of the claim = %v, %v; want it holding", head, err)
	}
	if err := e.End(ctx, kept, true); err != nil {
		t.Fatal(err)
	}
	lockMany("b")
	if got := e.CoverEnd("kept"); !got.IsZero() {
		t.Errorf("after its claim ended and %d other keys, the key's coverage is still kept (%v): its pin leaked", others, got)
	}
}
