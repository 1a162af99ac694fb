package lockset_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/waitgraph"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// TestReads: what deadlock detection reads over a Client. Set A holds
// "k1"; set B holds "k0" and waits at "k1"; a single Mutex waits at "k0",
// another at "k1" behind B.
// B's waiting claim is held back by A's claim, named with A's identity;
// the single's by B's hold of "k0", named with B's; a claim that holds
// has no holder ahead. A claim is unended while it holds or waits, and
// ended once released; a set's latest note is the store's.
func TestReads(t *testing.T) {
	synctest.Test(t, reads)
}

func reads(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	ca, cb, cc := client(t, store), client(t, store), client(t, store)
	a := newSet(t, ca, lockset.Mutex(mutex(t, ca, "k1")))
	b := newSet(t, cb, lockset.Mutex(mutex(t, cb, "k1")), lockset.Mutex(mutex(t, cb, "k0")))
	r := lockset.Reads(b)
	mustLock(t, a)
	doneB := make(chan error, 1)
	go func() { doneB <- b.LockContext(ctx) }()
	synctest.Wait()
	single := mutex(t, cc, "k0")
	doneS := make(chan error, 1)
	go func() { doneS <- single.LockContext(ctx) }()
	synctest.Wait()
	// A second single waits at "k1" behind B's waiting claim.
	behind := mutex(t, cc, "k1")
	doneBehind := make(chan error, 1)
	go func() { doneBehind <- behind.LockContext(ctx) }()
	synctest.Wait()

	// live are key's unended claims, lowest epoch first, and the sets
	// they name.
	live := func(key string, n int) (refs []driver.ClaimRef, sets []string) {
		t.Helper()
		var docs []driver.Doc
		store.Unended(func(d driver.Doc) bool {
			if d.Key == key {
				docs = append(docs, d)
			}
			return true
		})
		slices.SortFunc(docs, func(a, b driver.Doc) int { return cmp.Compare(a.Epoch, b.Epoch) })
		for _, d := range docs {
			refs, sets = append(refs, driver.ClaimRef{Key: key, Epoch: d.Epoch, Nonce: d.Nonce}), append(sets, d.Waiter)
		}
		if len(refs) != n {
			t.Fatalf("%q has %d unended claims, want %d", key, len(refs), n)
		}
		return refs, sets
	}
	holderOf := func(c driver.ClaimRef) waitgraph.Holder {
		t.Helper()
		hs, err := r.Holders(ctx, c)
		if err != nil || len(hs) != 1 {
			t.Fatalf("Holders(%+v) = %+v, %v; want one", c, hs, err)
		}
		return hs[0]
	}
	k1, k1Sets := live("k1", 3)
	k0, k0Sets := live("k0", 2)
	aHold, bWait, aID, bID := k1[0], k1[1], k1Sets[0], k1Sets[1]
	bHold, sWait, bID2, sID := k0[0], k0[1], k0Sets[0], k0Sets[1]
	if aHold.Epoch != a.Tokens()[0] {
		t.Errorf("A holds %d, its lowest unended claim of \"k1\" is %d", a.Tokens()[0], aHold.Epoch)
	}
	if aID == "" || bID == "" || bID2 != bID || sID != "" {
		t.Fatalf("the claims name sets A %q, B %q and %q, single %q", aID, bID, bID2, sID)
	}
	if h := holderOf(bWait); h.Claim != aHold || h.Waiter != aID {
		t.Errorf("B waits for %+v, want A's claim %+v of set %q", h, aHold, aID)
	}
	if h := holderOf(sWait); h.Claim != bHold || h.Waiter != bID {
		t.Errorf("the single waits for %+v, want B's claim %+v of set %q", h, bHold, bID)
	}
	// Behind a claim that waits, a claim waits for what holds, not for
	// the waiting claim.
	if h := holderOf(k1[2]); h.Claim != aHold || h.Waiter != aID {
		t.Errorf("the second single waits for %+v, want A's claim %+v", h, aHold)
	}
	if hs, err := r.Holders(ctx, aHold); err != nil || len(hs) != 0 {
		t.Errorf("A's holding claim waits for %+v, %v; want none", hs, err)
	}
	for _, c := range []driver.ClaimRef{aHold, bWait, bHold, sWait} {
		if live, err := r.Unended(ctx, c); err != nil || !live {
			t.Errorf("Unended(%+v) = %v, %v; want true", c, live, err)
		}
	}
	if _, found, err := r.LatestWait(ctx, bID); err != nil || found {
		t.Errorf("LatestWait of a set without notes = %v, %v", found, err)
	}
	note := driver.Wait{Set: bID, N: 1, Key: bWait.Key, Epoch: bWait.Epoch, Nonce: bWait.Nonce,
		Holds: []driver.ClaimRef{bHold}, Since: time.Now(), At: time.Now()}
	if err := store.Roles().Waits.PutWait(ctx, note); err != nil {
		t.Fatal(err)
	}
	if w, found, err := r.LatestWait(ctx, bID); err != nil || !found || w.N != 1 || w.Epoch != bWait.Epoch {
		t.Errorf("LatestWait = %+v, %v, %v; want the note put", w, found, err)
	}

	// A releases: B holds both keys, and A's claim has ended.
	a.Unlock()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if live, err := r.Unended(ctx, aHold); err != nil || live {
		t.Errorf("Unended of A's released claim = %v, %v; want false", live, err)
	}
	if hs, err := r.Holders(ctx, bWait); err != nil || len(hs) != 0 {
		t.Errorf("B's claim, now holding, waits for %+v, %v", hs, err)
	}
	b.Unlock()
	for _, done := range []chan error{doneS, doneBehind} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	single.Unlock()
	behind.Unlock()
	if live, err := r.Unended(ctx, bHold); err != nil || live {
		t.Errorf("Unended of B's released claim = %v, %v; want false", live, err)
	}
}
