package lockset_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// d is the deadlock timeout of these tests.
const d = time.Second

// scene is several processes (Clients) on one store in memory, each with
// Sets that detect deadlocks.
type scene struct {
	t     *testing.T
	store *memory.Store

	mu     sync.Mutex
	broken []event.Deadlock // told to the Clients' observers
}

func newScene(t *testing.T) *scene { return &scene{t: t, store: memory.New()} }

// set returns a Set of the Mutexes of keys, on a Client of its own.
func (sc *scene) set(keys ...string) (*lockset.Set, *dsync.Client) {
	sc.t.Helper()
	c := client(sc.t, sc.store, dsync.ClientWithObserver(event.Observer{DeadlockBroken: func(e event.Deadlock) {
		sc.mu.Lock()
		sc.broken = append(sc.broken, e)
		sc.mu.Unlock()
	}}))
	var ms []lockset.Member
	for _, k := range keys {
		ms = append(ms, lockset.Mutex(mutex(sc.t, c, k)))
	}
	s, err := lockset.New(c, ms, lockset.WithDeadlockTimeout(d))
	if err != nil {
		sc.t.Fatal(err)
	}
	return s, c
}

// id is the identity of s, held: the Waiter of its claim of key (its
// first member, given).
func (sc *scene) id(s *lockset.Set, key string) string {
	sc.t.Helper()
	doc, found, err := sc.store.Get(context.Background(), driver.ClaimID(key, s.Tokens()[0]))
	if err != nil || !found || doc.Waiter == "" {
		sc.t.Fatalf("the claim of %q: %+v, %v, %v", key, doc, found, err)
	}
	return doc.Waiter
}

// more starts s.LockMore of key (a Mutex on c) and returns its outcome's
// channel.
func (sc *scene) more(ctx context.Context, s *lockset.Set, c *dsync.Client, key string) chan error {
	done := make(chan error, 1)
	m := mutex(sc.t, c, key)
	go func() { done <- s.LockMore(ctx, lockset.Mutex(m)) }()
	synctest.Wait()
	return done
}

// deadlocks are the records of deadlocks broken.
func (sc *scene) deadlocks() []driver.Deadlock {
	sc.t.Helper()
	ds, err := sc.store.Roles().Deadlocks.ListDeadlocks(context.Background(), time.Time{})
	if err != nil {
		sc.t.Fatal(err)
	}
	return ds
}

// notes are the notes recorded.
func (sc *scene) notes() []driver.Wait {
	sc.t.Helper()
	ws, err := sc.store.Roles().Waits.ListWaits(context.Background(), time.Time{})
	if err != nil {
		sc.t.Fatal(err)
	}
	return ws
}

// outcome is done's outcome, within 10·D (of the bubble's time); it
// fails the test if there is none by then: a wait not broken.
func outcome(t *testing.T, what string, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * d):
		t.Fatalf("%s still waits after 10·D", what)
		return nil
	}
}

// pending fails the test if done has an outcome.
func pending(t *testing.T, what string, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned %v; want it waiting", what, err)
	default:
	}
}

// TestDeadlockTwoSets: A holds "k1", B "k2"; B, the younger (it locked
// later), waits for "k1" first, then A for "k2": a cycle. Within 2·D of
// its closing B, the youngest, gets a *DeadlockError naming both edges
// and is left unlocked (Lost closed, Err the error); A, the older, goes
// on and holds both keys, and one deadlock record names B the victim.
// Who waited first or closed the cycle does not choose the victim.
func TestDeadlockTwoSets(t *testing.T) {
	synctest.Test(t, deadlockTwoSets)
}

func deadlockTwoSets(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	a, ca := sc.set("k1")
	b, cb := sc.set("k2")
	mustLock(t, a)
	time.Sleep(time.Millisecond) // B is younger
	mustLock(t, b)
	aID, bID := sc.id(a, "k1"), sc.id(b, "k2")
	doneB := sc.more(ctx, b, cb, "k1")
	time.Sleep(d / 3)
	doneA := sc.more(ctx, a, ca, "k2")
	closed := time.Now()

	err := outcome(t, "B's LockMore", doneB)
	took := time.Since(closed)
	var de *lockset.DeadlockError
	if !errors.As(err, &de) || !errors.Is(err, lockset.ErrDeadlock) {
		t.Fatalf("B's LockMore = %v; want a *DeadlockError", err)
	}
	t.Logf("broken %v after the cycle closed (D = %v)", took, d)
	if took > 2*d {
		t.Errorf("the cycle was broken %v after it closed; the bound is 2·D = %v", took, 2*d)
	}
	want := []lockset.Edge{{Set: bID, Key: "k1", Token: a.Tokens()[0], HeldBy: aID}, {Set: aID, Key: "k2", HeldBy: bID}}
	if len(de.Cycle) != 2 {
		t.Fatalf("the cycle named is %+v; want 2 edges", de.Cycle)
	}
	for i, e := range de.Cycle {
		w := want[i]
		if e.Set != w.Set || e.Key != w.Key || e.HeldBy != w.HeldBy || (w.Token != 0 && e.Token != w.Token) || e.PID == 0 {
			t.Errorf("edge %d = %+v; want %+v", i, e, w)
		}
	}
	select {
	case <-b.Lost():
	default:
		t.Error("B's Lost is not closed after its deadlock")
	}
	if !errors.Is(b.Err(), lockset.ErrDeadlock) || b.Tokens() != nil {
		t.Errorf("B after its deadlock: Err %v, Tokens %v; want ErrDeadlock, none", b.Err(), b.Tokens())
	}
	if err := outcome(t, "A's LockMore", doneA); err != nil {
		t.Fatalf("A's LockMore = %v; want it to go on", err)
	}
	if tok := a.Tokens(); len(tok) != 2 {
		t.Fatalf("A holds %v; want both keys", tok)
	}
	ds := sc.deadlocks()
	if len(ds) != 1 || ds[0].Victim != bID || len(ds[0].Cycle) != 2 {
		t.Errorf("deadlock records %+v; want one, victim B %s, 2 edges", ds, bID)
	}
	synctest.Wait() // the observers' calls
	sc.mu.Lock()
	if len(sc.broken) != 1 || sc.broken[0].Victim != bID || sc.broken[0].Key != "k1" || len(sc.broken[0].Cycle) != 2 {
		t.Errorf("observers were told of %+v; want one deadlock, victim B at \"k1\"", sc.broken)
	}
	sc.mu.Unlock()
	a.Unlock()
	takeAll(t, ca, "k1", "k2")
}

// TestDeadlockThreeSets: A holds "k1", B "k2", C "k3", locked in that
// order; C, the youngest, waits for "k1", A for "k2", B for "k3". C
// alone gets a *DeadlockError of three edges within 2·D of the cycle's
// closing; B then holds "k3" at once, and A "k2" once B unlocks.
func TestDeadlockThreeSets(t *testing.T) {
	synctest.Test(t, deadlockThreeSets)
}

func deadlockThreeSets(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	a, ca := sc.set("k1")
	b, cb := sc.set("k2")
	c, cc := sc.set("k3")
	for _, s := range []*lockset.Set{a, b, c} {
		mustLock(t, s)
		time.Sleep(time.Millisecond)
	}
	cID := sc.id(c, "k3")
	doneC := sc.more(ctx, c, cc, "k1")
	time.Sleep(d / 4)
	doneA := sc.more(ctx, a, ca, "k2")
	time.Sleep(d / 4)
	doneB := sc.more(ctx, b, cb, "k3")
	closed := time.Now()

	err := outcome(t, "C's LockMore", doneC)
	took := time.Since(closed)
	var de *lockset.DeadlockError
	if !errors.As(err, &de) || len(de.Cycle) != 3 || de.Cycle[0].Set != cID {
		t.Fatalf("C's LockMore = %v; want a *DeadlockError of 3 edges from C", err)
	}
	t.Logf("broken %v after the cycle closed (D = %v)", took, d)
	if took > 2*d {
		t.Errorf("the cycle was broken %v after it closed; the bound is 2·D = %v", took, 2*d)
	}
	if err := outcome(t, "B's LockMore", doneB); err != nil {
		t.Fatalf("B's LockMore = %v; want it to go on", err)
	}
	pending(t, "A's LockMore", doneA)
	b.Unlock()
	if err := outcome(t, "A's LockMore", doneA); err != nil {
		t.Fatalf("A's LockMore = %v; want it to go on", err)
	}
	if ds := sc.deadlocks(); len(ds) != 1 || ds[0].Victim != cID {
		t.Errorf("deadlock records %+v; want one, victim C", ds)
	}
	a.Unlock()
	takeAll(t, ca, "k1", "k2", "k3")
}

// TestDeadlockChainBreaksNobody: A holds "k1" and waits for "k2", which
// B holds while it waits for "k3", which a single Mutex holds: a chain,
// not a cycle. For 10·D both wait, noted, and no one is broken; when the
// single unlocks, B and then A go on.
func TestDeadlockChainBreaksNobody(t *testing.T) {
	synctest.Test(t, deadlockChain)
}

func deadlockChain(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	single := mutex(t, client(t, sc.store), "k3")
	single.Lock()
	b, cb := sc.set("k2")
	mustLock(t, b)
	a, ca := sc.set("k1")
	mustLock(t, a)
	doneB := sc.more(ctx, b, cb, "k3")
	doneA := sc.more(ctx, a, ca, "k2")
	time.Sleep(10 * d)
	pending(t, "A's LockMore", doneA)
	pending(t, "B's LockMore", doneB)
	if n := len(sc.notes()); n != 2 {
		t.Errorf("%d notes; want A's and B's", n)
	}
	single.Unlock()
	if err := outcome(t, "B's LockMore", doneB); err != nil {
		t.Fatal(err)
	}
	b.Unlock()
	if err := outcome(t, "A's LockMore", doneA); err != nil {
		t.Fatal(err)
	}
	a.Unlock()
	if ds := sc.deadlocks(); len(ds) != 0 {
		t.Errorf("deadlock records %+v; want none", ds)
	}
}

// TestDeadlockResolvedWithinD: A holds "k1" and waits for "k2"; B holds
// "k2" and waits for "k1" with a context that ends 0.8·D later: the
// cycle lasts less than D, and resolves itself. No one gets ErrDeadlock,
// though A (the younger) keeps waiting for B past D, noted, until B
// unlocks.
func TestDeadlockResolvedWithinD(t *testing.T) {
	synctest.Test(t, deadlockResolved)
}

func deadlockResolved(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	b, cb := sc.set("k2")
	mustLock(t, b)
	a, ca := sc.set("k1")
	mustLock(t, a)
	doneA := sc.more(ctx, a, ca, "k2")
	time.Sleep(d / 10)
	bctx, cancel := context.WithTimeout(ctx, 8*d/10)
	defer cancel()
	doneB := sc.more(bctx, b, cb, "k1")
	if err := outcome(t, "B's LockMore", doneB); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B's LockMore = %v; want its context's end", err)
	}
	if b.Tokens() == nil {
		t.Fatal("B's failed LockMore left it unlocked; want it holding \"k2\" still")
	}
	time.Sleep(5 * d)
	pending(t, "A's LockMore", doneA)
	b.Unlock()
	if err := outcome(t, "A's LockMore", doneA); err != nil {
		t.Fatalf("A's LockMore = %v; want it to hold", err)
	}
	a.Unlock()
	if ds := sc.deadlocks(); len(ds) != 0 {
		t.Errorf("deadlock records %+v; want none", ds)
	}
}

// TestDeadlockStaleNote: B holds "k2" and waits for "k1", which A holds,
// for 1.5·D, noted, then gives up (its context ends) and keeps "k2".
// Then A, the younger, waits for "k2": B's note is stale (the claim it
// names has ended), so it makes no edge from B back to A, and no one is
// broken for 10·D, until B unlocks and A goes on.
func TestDeadlockStaleNote(t *testing.T) {
	synctest.Test(t, deadlockStale)
}

func deadlockStale(t *testing.T) {
	ctx := context.Background()
	sc := newScene(t)
	b, cb := sc.set("k2")
	mustLock(t, b)
	time.Sleep(time.Millisecond)
	a, ca := sc.set("k1")
	mustLock(t, a)
	bctx, cancel := context.WithTimeout(ctx, 3*d/2)
	defer cancel()
	doneB := sc.more(bctx, b, cb, "k1")
	if err := outcome(t, "B's LockMore", doneB); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B's LockMore = %v; want its context's end", err)
	}
	if n := len(sc.notes()); n != 1 {
		t.Fatalf("%d notes; want B's", n)
	}
	doneA := sc.more(ctx, a, ca, "k2")
	time.Sleep(10 * d)
	pending(t, "A's LockMore", doneA)
	b.Unlock()
	if err := outcome(t, "A's LockMore", doneA); err != nil {
		t.Fatalf("A's LockMore = %v; want it to hold", err)
	}
	a.Unlock()
	if ds := sc.deadlocks(); len(ds) != 0 {
		t.Errorf("deadlock records %+v; want none", ds)
	}
}

// noNotes is a store that keeps no notes or deadlock records.
type noNotes struct{ *memory.Store }

func (s noNotes) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Waits, r.Deadlocks = nil, nil
	return r
}

// TestDeadlockNoNotesRole: on a store without the Waits role detection is
// off: a cycle of two Sets with a deadlock timeout waits on for 10·D, as
// without one, until a context ends; that LockMore returns its
// context's cause and the other goes on.
func TestDeadlockNoNotesRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := noNotes{memory.New()}
		set := func(key string) (*lockset.Set, *dsync.Client) {
			c := client(t, store)
			s, err := lockset.New(c, []lockset.Member{lockset.Mutex(mutex(t, c, key))}, lockset.WithDeadlockTimeout(d))
			if err != nil {
				t.Fatal(err)
			}
			mustLock(t, s)
			return s, c
		}
		a, ca := set("k1")
		b, cb := set("k2")
		bctx, cancel := context.WithCancel(ctx)
		doneB := make(chan error, 1)
		go func() { doneB <- b.LockMore(bctx, lockset.Mutex(mutex(t, cb, "k1"))) }()
		doneA := make(chan error, 1)
		go func() { doneA <- a.LockMore(ctx, lockset.Mutex(mutex(t, ca, "k2"))) }()
		time.Sleep(10 * d)
		pending(t, "A's LockMore", doneA)
		pending(t, "B's LockMore", doneB)
		cancel()
		if err := <-doneB; !errors.Is(err, context.Canceled) {
			t.Errorf("B's LockMore = %v; want its context's end", err)
		}
		b.Unlock()
		if err := <-doneA; err != nil {
			t.Fatal(err)
		}
		a.Unlock()
	})
}

// TestDeadlockOnASlowStore: every read of the lock sets' notes takes
// 3·D/4, so that one check's reads (the graph's two passes read the note of
// each Set of the cycle) take longer than D. The cycle is still broken, B
// the victim, and A goes on: a check is bounded by its wait, not cut
// short at D, as it was when every tick gave up before it decided
// (FerretDB on PostgreSQL beside other work let a cycle live past a TTL).
func TestDeadlockOnASlowStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		slow := memory.New().Intercept(func(ctx context.Context, c memory.Call, _ func() error) error {
			if c.Op != "LatestWait" && c.Op != "ListWaits" {
				return nil
			}
			select {
			case <-time.After(d * 3 / 4):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		sc := &scene{t: t, store: slow}
		a, ca := sc.set("k1")
		b, cb := sc.set("k2")
		mustLock(t, a)
		time.Sleep(time.Millisecond) // B is younger
		mustLock(t, b)
		doneB := sc.more(ctx, b, cb, "k1")
		time.Sleep(d / 3)
		doneA := sc.more(ctx, a, ca, "k2")
		closed := time.Now()
		if err := outcome(t, "B's LockMore", doneB); !errors.Is(err, lockset.ErrDeadlock) {
			t.Fatalf("B's LockMore = %v; want ErrDeadlock", err)
		}
		t.Logf("broken %v after the cycle closed (D = %v, each read of a note %v)", time.Since(closed), d, d*3/4)
		if err := outcome(t, "A's LockMore", doneA); err != nil {
			t.Fatalf("A's LockMore = %v; want it to go on", err)
		}
		a.Unlock()
	})
}
