package lockset_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// TestLockMore: LockMore adds members to a held Set: Tokens lists theirs
// after the others', in the order given, each its key's own token;
// Unlock releases all; the next Lock takes them all, and the Set's
// order (a waiter at the lowest key) holds for them too.
func TestLockMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memory.New()
		c, other := client(t, store), client(t, store)
		s := newSet(t, c, lockset.Mutex(mutex(t, c, "m")))
		mustLock(t, s)
		// "a" is held elsewhere for a while: LockMore waits for it.
		held := mutex(t, other, "a")
		held.Lock()
		go func() {
			time.Sleep(time.Second)
			held.Unlock()
		}()
		if err := s.LockMore(ctx, lockset.Mutex(mutex(t, c, "z")), lockset.Mutex(mutex(t, c, "a"))); err != nil {
			t.Fatal(err)
		}
		tokens := s.Tokens()
		if len(tokens) != 3 {
			t.Fatalf("Tokens = %v; want 3", tokens)
		}
		for i, k := range []string{"m", "z", "a"} {
			probe := mutex(t, other, k)
			if err := probe.TryLockContext(ctx); !errors.Is(err, dsync.ErrHeld) {
				t.Errorf("%q is not held by the Set: %v", k, err)
			} else if he := (*dsync.HeldError)(nil); errors.As(err, &he) && he.Token != tokens[i] {
				t.Errorf("%q is held with token %d, Tokens says %d", k, he.Token, tokens[i])
			}
		}
		s.Unlock()
		takeAll(t, other, "m", "z", "a")
		mustLock(t, s)
		if got := s.Tokens(); len(got) != 3 || slices.Equal(got, tokens) {
			t.Errorf("the next Lock holds %v; want 3 new tokens", got)
		}
		s.Unlock()
		takeAll(t, other, "m", "z", "a")
	})
}

// TestLockMoreRefusals: LockMore panics on an unlocked Set and for a key
// the Set has; it refuses two members of one key, a member of another
// Client, and returns its context's cause, each leaving the Set holding what it held
// and nothing more.
func TestLockMoreRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memory.New()
		c, other := client(t, store), client(t, store)
		s, err := lockset.New(c, []lockset.Member{lockset.Mutex(mutex(t, c, "m"))}, lockset.WithDeadlockTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got := panicOf(func() { _ = s.LockMore(ctx, lockset.Mutex(mutex(t, c, "x"))) }); !strings.Contains(got, "LockMore of unlocked Set") {
			t.Errorf("LockMore of an unlocked Set: panic %q", got)
		}
		mustLock(t, s)
		tokens := s.Tokens()
		if got := panicOf(func() { _ = s.LockMore(ctx, lockset.Mutex(mutex(t, c, "m"))) }); !strings.Contains(got, "whose key the Set has") {
			t.Errorf("LockMore of a key the Set has: panic %q", got)
		}
		busy := mutex(t, other, "b")
		busy.Lock()
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for _, x := range []struct {
			name string
			call func() error
			want error
		}{
			{"two of one key", func() error {
				return s.LockMore(ctx, lockset.Mutex(mutex(t, c, "x")), lockset.Mutex(mutex(t, c, "x")))
			}, lockset.ErrTwice},
			{"another Client's", func() error { return s.LockMore(ctx, lockset.Mutex(mutex(t, other, "x"))) }, lockset.ErrOtherClient},
			{"a context that ends", func() error {
				return s.LockMore(cctx, lockset.Mutex(mutex(t, c, "a")), lockset.Mutex(mutex(t, c, "b")))
			}, context.DeadlineExceeded},
		} {
			if err := x.call(); !errors.Is(err, x.want) {
				t.Errorf("LockMore of %s = %v; want %v", x.name, err, x.want)
			}
			if got := s.Tokens(); !slices.Equal(got, tokens) {
				t.Errorf("after LockMore of %s the Set holds %v; want %v as before", x.name, got, tokens)
			}
		}
		busy.Unlock()
		takeAll(t, other, "a", "b", "x")
		s.Unlock()
		takeAll(t, other, "m")
	})
}

// TestDeadlockTimeoutRange: 0 (off) and MinDeadlockTimeout up to the
// Client's TTL are taken; a timeout under the minimum, or above the TTL,
// is refused.
func TestDeadlockTimeoutRange(t *testing.T) {
	c := client(t, memory.New(), dsync.ClientWithTTL(2*time.Second))
	m := lockset.Mutex(mutex(t, c, "k"))
	for _, x := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {lockset.MinDeadlockTimeout, true}, {2 * time.Second, true},
		{-time.Second, false}, {lockset.MinDeadlockTimeout - 1, false}, {2*time.Second + 1, false}} {
		_, err := lockset.New(c, []lockset.Member{m}, lockset.WithDeadlockTimeout(x.d))
		if (err == nil) != x.ok || (err != nil && !errors.Is(err, lockset.ErrDeadlockTimeout)) {
			t.Errorf("WithDeadlockTimeout(%v): New = %v; want ok %v", x.d, err, x.ok)
		}
	}
}

// TestDeadlockOrderedLockStartsAgain: Q holds "k2" and then, by
// LockMore, waits for "k1"; P, a younger Set of "k1" and "k2" locked
// all at once, holds "k1" and waits for "k2": a cycle. P, the youngest,
// gives up its wait, releases "k1", records the break and starts again,
// keeping its identity: Q goes on at once, and P holds both once Q
// unlocks. Lock never returns ErrDeadlock.
func TestDeadlockOrderedLockStartsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		sc := newScene(t)
		q, cq := sc.set("k2")
		mustLock(t, q)
		time.Sleep(time.Millisecond)
		p, _ := sc.set("k1", "k2")
		doneP := make(chan error, 1)
		go func() { doneP <- p.LockContext(ctx) }()
		time.Sleep(d / 2)
		doneQ := sc.more(ctx, q, cq, "k1")
		if err := outcome(t, "Q's LockMore", doneQ); err != nil {
			t.Fatalf("Q's LockMore = %v; want it to go on", err)
		}
		pending(t, "P's Lock", doneP)
		q.Unlock()
		if err := outcome(t, "P's Lock", doneP); err != nil {
			t.Fatalf("P's Lock = %v", err)
		}
		pID := sc.id(p, "k1")
		if ds := sc.deadlocks(); len(ds) != 1 || ds[0].Victim != pID {
			t.Errorf("deadlock records %+v; want one, victim P %s", ds, pID)
		}
		p.Unlock()
	})
}

// TestLockMoreMemberLost: a member added by LockMore is watched as the
// others are: when it stalls, the Lost channel taken before LockMore
// closes, and Err names it.
func TestLockMoreMemberLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := client(t, memory.New())
		const deadline = time.Second
		s := newSet(t, c, lockset.Mutex(mutex(t, c, "m")))
		mustLock(t, s)
		lost := s.Lost()
		if err := s.LockMore(context.Background(), lockset.Mutex(mutex(t, c, "added", dsync.WithProgressDeadline(deadline)))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * deadline)
		synctest.Wait()
		select {
		case <-lost:
		default:
			t.Fatal("Lost did not close when the added member stalled")
		}
		if err := s.Err(); !errors.Is(err, dsync.ErrStalled) || !strings.Contains(err.Error(), `"added"`) {
			t.Errorf("Err = %v; want one naming \"added\" and wrapping dsync.ErrStalled", err)
		}
		if err := s.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("UnlockContext = %v; want dsync.ErrLost", err)
		}
	})
}
