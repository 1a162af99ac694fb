package lockset_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// TestClaimsNameTheSet: every member claim of one Lock or TryLock names
// the same set identity (Doc.Waiter), the claim a member waited for
// included; the next holding of the same Set names another; and the
// claims of single primitives name none. Deadlock detection follows
// these from a blocked claim to the set that holds its key.
func TestClaimsNameTheSet(t *testing.T) {
	synctest.Test(t, claimsNameTheSet)
}

func claimsNameTheSet(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	c, other := client(t, store), client(t, store)
	waiterOf := func(key string, token uint64) string {
		t.Helper()
		d, found, err := store.Get(ctx, driver.ClaimID(key, token))
		if err != nil || !found {
			t.Fatalf("the claim of %q at %d: found %v, %v", key, token, found, err)
		}
		return d.Waiter
	}
	// keys are the members' keys as stored.
	keys := []string{"a", "b", "dsync:rw/c"}
	oneSet := func(s *lockset.Set) string {
		t.Helper()
		tokens := s.Tokens()
		id := waiterOf(keys[0], tokens[0])
		if id == "" {
			t.Fatalf("the claim of %q names no set", keys[0])
		}
		for i, k := range keys[1:] {
			if w := waiterOf(k, tokens[i+1]); w != id {
				t.Errorf("the claim of %q names set %q, that of %q names %q: want one", k, w, keys[0], id)
			}
		}
		return id
	}

	// A single Mutex's claim names none.
	single := mutex(t, other, "b")
	single.Lock()
	if w := waiterOf("b", single.Token()); w != "" {
		t.Errorf("a single Mutex's claim names set %q, want none", w)
	}

	s := newSet(t, c, lockset.Mutex(mutex(t, c, "a")), lockset.Mutex(mutex(t, c, "b")), lockset.Write(rwmutex(t, c, "c")))
	// The set waits at "b" behind the single Mutex: its claim there is
	// the one it waited with.
	done := make(chan error, 1)
	go func() { done <- s.LockContext(ctx) }()
	synctest.Wait()
	select {
	case err := <-done:
		t.Fatalf("the set locked while a single Mutex held \"b\": %v", err)
	default: // queued at "b"
	}
	single.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first := oneSet(s)
	s.Unlock()

	if !s.TryLock() {
		t.Fatal("TryLock of a free set failed")
	}
	second := oneSet(s)
	s.Unlock()
	if second == first {
		t.Errorf("two holdings of the set share the identity %q", first)
	}

	rw := rwmutex(t, other, "c")
	rw.RLock()
	if w := waiterOf("dsync:rw/c", rw.Token()); w != "" {
		t.Errorf("a single RWMutex reader's claim names set %q, want none", w)
	}
	rw.RUnlock()
}
