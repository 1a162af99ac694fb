package lockset_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// A Set taken while nobody else holds its keys holds them all, with each
// key's token above the previous holder's, in the order given; after its
// Unlock the next holder's tokens are above the Set's.
func TestTokensAbovePreviousHolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := client(t, store), client(t, store)
		keys := []string{"k2", "k0", "k1"}
		single := func() []uint64 {
			var out []uint64
			for _, k := range keys {
				m := mutex(t, b, k)
				m.Lock()
				out = append(out, m.Token())
				m.Unlock()
			}
			return out
		}
		before := single()
		var members []lockset.Member
		for _, k := range keys {
			members = append(members, lockset.Mutex(mutex(t, a, k)))
		}
		s := newSet(t, a, members...)
		mustLock(t, s)
		got := s.Tokens()
		s.Unlock()
		after := single()
		for i, k := range keys {
			if got[i] <= before[i] || after[i] <= got[i] {
				t.Errorf("%q: tokens %d (before), %d (the Set), %d (after): want increasing", k, before[i], got[i], after[i])
			}
		}
		if s.Tokens() != nil {
			t.Error("Tokens of an unlocked Set is not nil")
		}
	})
}

// The members of TestEveryOrderAlike: a Mutex "c" (stored "c"), an
// RWMutex "a" for writing and an RWMutex "b" for reading (stored
// "dsync:rw/a", "dsync:rw/b"). In the set's order: c, rw/a, rw/b; in
// the order of the keys as given: a, b, c.
type member struct {
	name   string
	member lockset.Member
	token  func() uint64
	// busy makes another Client hold the member's key against it, and
	// returns the release; free reports whether a third takes it at once.
	busy func() func()
	free func() bool
}

func orderMembers(t *testing.T, a, b, c *dsync.Client) []member {
	m := mutex(t, a, "c")
	w := rwmutex(t, a, "a")
	r := rwmutex(t, a, "b")
	holdM := func(cl *dsync.Client, key string) func() func() {
		return func() func() {
			x := mutex(t, cl, key)
			x.Lock()
			return x.Unlock
		}
	}
	holdW := func(cl *dsync.Client, key string) func() func() {
		return func() func() {
			x := rwmutex(t, cl, key)
			x.Lock()
			return x.Unlock
		}
	}
	try := func(lock func(context.Context) error, unlock func()) bool {
		if lock(context.Background()) != nil {
			return false
		}
		unlock()
		return true
	}
	cm, cw, cr := mutex(t, c, "c"), rwmutex(t, c, "a"), rwmutex(t, c, "b")
	return []member{
		{"Mutex c", lockset.Mutex(m), m.Token, holdM(b, "c"), func() bool { return try(cm.TryLockContext, cm.Unlock) }},
		{"Write a", lockset.Write(w), w.Token, holdW(b, "a"), func() bool { return try(cw.TryRLockContext, cw.RUnlock) }},
		{"Read b", lockset.Read(r), r.Token, holdW(b, "b"), func() bool { return try(cr.TryLockContext, cr.Unlock) }},
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// Whatever order its members are given in, a Set takes them in the one
// order of their stored keys: with any one of them busy, it holds exactly
// those before it in that order while it waits, and nothing after; once
// the busy one is free it holds all, with Tokens in the order given.
func TestEveryOrderAlike(t *testing.T) {
	for _, perm := range permutations(3) {
		for busy := range 3 {
			t.Run(fmt.Sprintf("%v busy %d", perm, busy), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					store := memory.New()
					a, b, c := client(t, store), client(t, store), client(t, store)
					ms := orderMembers(t, a, b, c)
					var given []lockset.Member
					for _, i := range perm {
						given = append(given, ms[i].member)
					}
					s := newSet(t, a, given...)
					release := ms[busy].busy()
					done := make(chan error, 1)
					go func() { done <- s.LockContext(context.Background()) }()
					synctest.Wait()
					select {
					case err := <-done:
						t.Fatalf("LockContext returned %v while %s was busy", err, ms[busy].name)
					default:
					}
					for i, m := range ms {
						if i == busy {
							continue
						}
						if held := !m.free(); held != (i < busy) {
							t.Errorf("waiting at %s, the Set holds %s: %v, want %v", ms[busy].name, m.name, held, i < busy)
						}
					}
					release()
					if err := <-done; err != nil {
						t.Fatal(err)
					}
					tokens := s.Tokens()
					for j, i := range perm {
						if tokens[j] != ms[i].token() || tokens[j] == 0 {
							t.Errorf("Tokens()[%d] = %d, %s's token %d", j, tokens[j], ms[i].name, ms[i].token())
						}
					}
					s.Unlock()
				})
			})
		}
	}
}

// Two kinds of lockers on four Mutex keys and one RWMutex key, in many
// goroutines of three processes, for many rounds: Sets naming the keys in
// opposite (and other) orders, reading or writing the RWMutex, and single
// lockers of one key. In one process the lockers share one Mutex or
// RWMutex value per key, so that they meet at its local turn too. None
// deadlocks: every LockContext holds within its context, long as it is (a
// minute, four TTLs); and while a key is held for writing, nothing else
// holds it.
func TestOppositeOrdersNeverDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		clients := []*dsync.Client{client(t, store), client(t, store), client(t, store)}
		keys := []string{"k0", "k1", "k2", "k3", "rw"}
		const rw = 4
		type use struct {
			key   int
			write bool
		}
		w := func(k int) use { return use{k, true} }
		orders := [][]use{
			{w(0), w(1), w(2), w(3)}, {w(3), w(2), w(1), w(0)}, {w(1), w(0)}, {w(0), w(1)},
			{w(2), w(0), w(3)}, {w(3), w(1)}, {w(rw), w(0), w(1)}, {w(1), w(0), {rw, false}},
			{w(3), {rw, false}, w(2)}, {w(rw), w(3)},
		}
		var mu sync.Mutex
		var readers, writers [5]int
		enter := func(u use, d int) {
			mu.Lock()
			defer mu.Unlock()
			if u.write {
				writers[u.key] += d
			} else {
				readers[u.key] += d
			}
			if writers[u.key] > 1 || writers[u.key] == 1 && readers[u.key] > 0 {
				t.Errorf("%s held by %d writers and %d readers", keys[u.key], writers[u.key], readers[u.key])
			}
		}
		const rounds = 30
		errs := make(chan error, 64)
		run := func(lock func(context.Context) error, unlock func(), held []use) {
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err := lock(ctx)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				for _, u := range held {
					enter(u, 1)
				}
				time.Sleep(time.Millisecond) // work, in the bubble's time
				for _, u := range held {
					enter(u, -1)
				}
				unlock()
			}
		}
		// values returns the lockers' primitives on c: shared by every
		// locker of the first process, each locker's own elsewhere.
		shared := map[int]any{}
		value := func(ci int, c *dsync.Client, k int) any {
			if v, ok := shared[k]; ok && ci == 0 {
				return v
			}
			var v any
			if k == rw {
				v = rwmutex(t, c, keys[k])
			} else {
				v = mutex(t, c, keys[k])
			}
			if ci == 0 {
				shared[k] = v
			}
			return v
		}
		var wg sync.WaitGroup
		for g, order := range orders {
			for ci, c := range clients {
				var members []lockset.Member
				for _, u := range order {
					switch v := value(ci, c, u.key).(type) {
					case *dsync.Mutex:
						members = append(members, lockset.Mutex(v))
					case *dsync.RWMutex:
						if u.write {
							members = append(members, lockset.Write(v))
						} else {
							members = append(members, lockset.Read(v))
						}
					}
				}
				s := newSet(t, c, members...)
				wg.Go(func() { run(s.LockContext, s.Unlock, order) })
				if g < rw {
					m := value(ci, c, g).(*dsync.Mutex)
					wg.Go(func() { run(m.LockContext, m.Unlock, []use{w(g)}) })
				}
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("a locker did not hold within a minute: %v", err)
		}
	})
}

// TryLockContext holds all members or none: with one member held by
// another process it returns that member's *dsync.HeldError, and a third
// process then takes every other member at once.
func TestTryAllOrNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b, c := client(t, store), client(t, store), client(t, store)
		keys := []string{"t0", "t1", "t2", "t3"}
		for busy, key := range keys {
			var members []lockset.Member
			for _, k := range keys {
				members = append(members, lockset.Mutex(mutex(t, a, k)))
			}
			s := newSet(t, a, members...)
			blocker := mutex(t, b, key)
			blocker.Lock()
			err := s.TryLockContext(context.Background())
			if !errors.Is(err, dsync.ErrHeld) || heldErrorKey(err) != key {
				t.Errorf("with %q held, TryLockContext = %v, want a *dsync.HeldError of %q", key, err, key)
			}
			if s.TryLock() {
				t.Errorf("with %q held, TryLock held", key)
			}
			var others []string
			for i, k := range keys {
				if i != busy {
					others = append(others, k)
				}
			}
			takeAll(t, c, others...)
			blocker.Unlock()
			if err := s.TryLockContext(context.Background()); err != nil {
				t.Fatalf("with every key free, TryLockContext = %v", err)
			}
			s.Unlock()
		}
	})
}

// A LockContext whose ctx ends while it waits at a member held by another
// process returns ctx's cause, and leaves nothing held nor waiting: once
// that member is free, a third process takes every key at once.
func TestCancelLeavesNothingHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b, c := client(t, store), client(t, store), client(t, store)
		keys := []string{"c0", "c1", "c2", "c3"}
		for busy, key := range keys {
			var members []lockset.Member
			for i := range keys {
				members = append(members, lockset.Mutex(mutex(t, a, keys[len(keys)-1-i])))
			}
			s := newSet(t, a, members...)
			blocker := mutex(t, b, key)
			blocker.Lock()
			cause := fmt.Errorf("gave up at %q", key)
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.LockContext(ctx) }()
			synctest.Wait()
			cancel(cause)
			if err := <-done; !errors.Is(err, cause) {
				t.Errorf("busy %d: LockContext = %v, want %v", busy, err, cause)
			}
			blocker.Unlock()
			takeAll(t, c, keys...)
			select {
			case <-s.Lost():
			default:
				t.Error("Lost of an unlocked Set is not closed")
			}
		}
	})
}

// A LockContext whose ctx ends while its store does not answer returns
// within the release timeouts of what it gives up, not when the store
// answers; what it sent and could not see confirmed lands later, and then
// another process takes every key at once.
func TestCancelWhileTheStoreHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		p := store.Process()
		a, b, c := client(t, p), client(t, store), client(t, store)
		keys := []string{"h0", "h1", "h2"}
		var members []lockset.Member
		for _, k := range keys {
			members = append(members, lockset.Mutex(mutex(t, a, k)))
		}
		s := newSet(t, a, members...)
		blocker := mutex(t, b, "h1")
		blocker.Lock()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.LockContext(ctx) }()
		synctest.Wait()
		p.SetAnswering(false)
		cancel()
		start := time.Now()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("LockContext = %v, want context.Canceled", err)
		}
		if took := time.Since(start); took > 2*dsync.DefaultReleaseTimeout {
			t.Errorf("LockContext returned %v after ctx ended, on a store that does not answer", took)
		}
		p.SetAnswering(true)
		blocker.Unlock()
		synctest.Wait()
		takeAll(t, c, keys...)
	})
}
