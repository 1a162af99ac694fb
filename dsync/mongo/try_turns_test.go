package dsyncmongo

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// turnTaker is one primitive's blocking take and give back, and its try,
// on one process.
type turnTaker struct {
	name       string
	take, give func(context.Context) error
	try        func(context.Context) error
}

// turnTakers returns a Mutex, an RWMutex (write and read) and a
// Semaphore of p, each on a key of its own.
func turnTakers(t *testing.T, p *proc) []turnTaker {
	t.Helper()
	c := p.b.Client
	m := newMutex(t, c, "mutex")
	rw, err := dsync.NewRWMutex(c, "rw", quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := dsync.NewRWMutex(c, "rw-read", quiet)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dsync.NewSemaphore(c, "sem", 2, quiet)
	if err != nil {
		t.Fatal(err)
	}
	release := func(context.Context) error { s.Release(1); return nil }
	return []turnTaker{
		{"Mutex", m.LockContext, m.UnlockContext, m.TryLockContext},
		{"RWMutex", rw.LockContext, rw.UnlockContext, rw.TryLockContext},
		{"RWMutex (read)", r.RLockContext, func(context.Context) error { r.RUnlock(); return nil }, r.TryRLockContext},
		{"Semaphore", func(ctx context.Context) error { return s.Acquire(ctx, 1) }, release,
			func(ctx context.Context) error { return s.TryAcquireContext(ctx, 1) }},
	}
}

// TestTryAfterAnotherProcessTookTurns: a try of a free key holds, even
// when the process that tries held the key before and another process
// has held and released it since (the try's insert for the epoch after
// its own release loses to the other's claim, which has ended); and two
// processes that take turns with a try hold at every turn.
func TestTryAfterAnotherProcessTookTurns(t *testing.T) {
	ps := newProcs(t, 2)
	ctx := testCtx(t, 2*time.Minute)
	procs := [][]turnTaker{turnTakers(t, ps[0]), turnTakers(t, ps[1])}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for i, a := range procs[0] {
		b := procs[1][i]
		must(a.name+" take", a.take(ctx))
		must(a.name+" give back", a.give(ctx))
		must(a.name+" take by the other process", b.take(ctx))
		must(a.name+" give back by the other process", b.give(ctx))
		if err := a.try(ctx); err != nil {
			t.Errorf("%s: try of a free key, after it was held here and then by another process: %v", a.name, err)
		} else {
			must(a.name+" give back", a.give(ctx))
		}
		failed := 0
		for turn := range 20 {
			tt := procs[turn%2][i]
			if err := tt.try(ctx); err != nil {
				failed++
				t.Logf("%s, turn %d: %v", tt.name, turn, err)
				continue
			}
			must(tt.name+" give back", tt.give(ctx))
		}
		if failed > 0 {
			t.Errorf("%s: %d of 20 tries of a free key failed, taking turns between two processes", a.name, failed)
		}
	}
}
