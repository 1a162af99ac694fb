package register

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestMain(m *testing.M) { mongotest.MainWithLeakCheck(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestFencedRejectsStaleTokens(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx := ctx(t)
	old, cur := NewFenced(db, "r"), NewFenced(db, "r")

	v, err := old.Read(ctx, 1)
	if err != nil || v != 0 {
		t.Fatalf("Read(1) = %d, %v", v, err)
	}
	// A newer holder reads: from now on token 1 is stale, even before the
	// newer holder writes.
	if v, err := cur.Read(ctx, 2); err != nil || v != 0 {
		t.Fatalf("Read(2) = %d, %v", v, err)
	}
	if err := old.Write(ctx, 1, v+1, "stale"); !errors.Is(err, ErrStale) {
		t.Fatalf("stale write: %v, want ErrStale", err)
	}
	if _, err := old.Read(ctx, 1); !errors.Is(err, ErrStale) {
		t.Fatalf("stale read: %v, want ErrStale", err)
	}
	if err := cur.Write(ctx, 2, 1, "ok"); err != nil {
		t.Fatal(err)
	}
	vs, err := cur.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, applied, problems := Verify(vs)
	if final != 1 || !applied["ok"] || applied["stale"] || len(problems) > 0 {
		t.Fatalf("final %d, applied %v, problems %v", final, applied, problems)
	}
}

// Holders with increasing tokens race each other (a stale holder still
// writing while the next one starts), on FerretDB whose conditional
// updates are not atomic: the chain stays consistent, every acknowledged
// write is in it, and no increment is lost.
func TestFencedUnderConcurrency(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx := ctx(t)
	const holders, writes = 8, 20
	var mu sync.Mutex
	acked := make(map[string]bool)
	var wg sync.WaitGroup
	for tok := uint64(1); tok <= holders; tok++ {
		wg.Add(1)
		time.Sleep(3 * time.Millisecond) // each takes over while the last still writes
		go func() {
			defer wg.Done()
			r := NewFenced(db, "c")
			for i := range writes {
				v, err := r.Read(ctx, tok)
				if errors.Is(err, ErrStale) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				wid := fmt.Sprintf("%d.%d", tok, i)
				switch err := r.Write(ctx, tok, v+1, wid); {
				case errors.Is(err, ErrStale):
					return
				case err != nil:
					// Our own earlier write got in between? Only a bug can
					// make the head differ from what we read under our token.
					t.Error(err)
					return
				}
				mu.Lock()
				acked[wid] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	vs, err := NewFenced(db, "c").Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, applied, problems := Verify(vs)
	for _, p := range problems {
		t.Error(p)
	}
	if final != int64(len(acked)) || len(applied) != len(acked) {
		t.Errorf("final %d, %d writes applied, %d acknowledged", final, len(applied), len(acked))
	}
	for wid := range acked {
		if !applied[wid] {
			t.Errorf("acknowledged write %s not applied", wid)
		}
	}
	t.Logf("%d versions, final value %d", len(vs), final)
}

func TestVerifyFindsLostUpdates(t *testing.T) {
	vs := []Version{
		{Ver: 1, Token: 1, Value: 0, Kind: "fence"},
		{Ver: 2, Token: 1, Value: 1, Kind: "write", WID: "a"},
		{Ver: 3, Token: 2, Value: 1, Kind: "fence"},
		{Ver: 4, Token: 1, Value: 1, Kind: "write", WID: "b"}, // stale token, stale value
	}
	_, _, problems := Verify(vs)
	if len(problems) != 2 {
		t.Fatalf("problems %q, want a token going back and a lost update", problems)
	}
}

func TestUnfencedLosesUpdates(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx := ctx(t)
	old, cur := NewUnfenced(db, "u"), NewUnfenced(db, "u")
	v1, _ := old.Read(ctx, 1)
	v2, _ := cur.Read(ctx, 2)
	if err := cur.Write(ctx, 2, v2+1, "new"); err != nil {
		t.Fatal(err)
	}
	if err := old.Write(ctx, 1, v1+1, "old"); err != nil {
		t.Fatal(err)
	}
	if v, _ := cur.Value(ctx); v != 1 {
		t.Fatalf("value %d after two increments: the unfenced register should have lost one", v)
	}
}
