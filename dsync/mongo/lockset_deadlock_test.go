package dsyncmongo

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// TestLockSetDeadlockBroken: on the server, two processes (each its own
// Client and connection) close a cycle of lock sets: A holds "dl1", B
// (younger) holds "dl2"; B grows its set by "dl1", then A by "dl2". B,
// the youngest, gets a *DeadlockError naming both edges, its set
// unlocked; A goes on and holds both; the store keeps both notes and one
// deadlock record naming B. The bound is generous (the TTL): the time
// taken is logged beside 2·D.
func TestLockSetDeadlockBroken(t *testing.T) {
	t.Parallel()
	const d = 500 * time.Millisecond
	ctx := testCtx(t, 60*time.Second)
	ps := newProcs(t, 2)
	set := func(p *proc, key string) *lockset.Set {
		t.Helper()
		s, err := lockset.New(p.b.Client, []lockset.Member{lockset.Mutex(newMutex(t, p.b.Client, key))}, lockset.WithDeadlockTimeout(d))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := set(ps[0], "dl1")
	time.Sleep(10 * time.Millisecond) // B's Since is later: B is younger
	b := set(ps[1], "dl2")
	doneB := make(chan error, 1)
	go func() { doneB <- b.LockMore(ctx, lockset.Mutex(newMutex(t, ps[1].b.Client, "dl1"))) }()
	time.Sleep(d / 4)
	doneA := make(chan error, 1)
	go func() { doneA <- a.LockMore(ctx, lockset.Mutex(newMutex(t, ps[0].b.Client, "dl2"))) }()
	closed := time.Now()

	var errB error
	select {
	case errB = <-doneB:
	case <-time.After(dsync.DefaultTTL):
		t.Fatalf("B still waits a TTL (%v) after the cycle closed", dsync.DefaultTTL)
	}
	took := time.Since(closed)
	t.Logf("the cycle was broken %v after it closed (2·D = %v)", took, 2*d)
	var de *lockset.DeadlockError
	if !errors.As(errB, &de) || len(de.Cycle) != 2 || de.Cycle[0].Key != "dl1" || de.Cycle[1].Key != "dl2" {
		t.Fatalf("B's LockMore = %v; want a *DeadlockError of B at dl1 and A at dl2", errB)
	}
	if b.Tokens() != nil {
		t.Error("B still holds after its deadlock")
	}
	if err := <-doneA; err != nil {
		t.Fatalf("A's LockMore = %v; want it to go on", err)
	}
	if len(a.Tokens()) != 2 {
		t.Fatalf("A holds %v; want both keys", a.Tokens())
	}
	ds, err := ps[0].b.s.Roles().Deadlocks.ListDeadlocks(ctx, closed.Add(-time.Minute))
	if err != nil || len(ds) != 1 || ds[0].Victim != de.Cycle[0].Set || len(ds[0].Cycle) != 2 {
		t.Errorf("deadlock records %+v, %v; want one, victim B %s", ds, err, de.Cycle[0].Set)
	}
	ws, err := ps[0].b.s.Roles().Waits.ListWaits(ctx, closed.Add(-time.Minute))
	if err != nil || len(ws) != 2 {
		t.Errorf("notes %+v, %v; want A's and B's", ws, err)
	}
	if err := a.UnlockContext(ctx); err != nil {
		t.Error(err)
	}
}
