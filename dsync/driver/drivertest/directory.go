package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The directory of keys: PutKeys records keys, ListKeys streams them.

// dirKeys are the keys the listing cases record, in the order they are
// recorded (not in order of bytes): prefixes of each other, a key that
// ends in the highest code point, one past it, a namespaced one.
var dirKeys = []string{
	"a/2", "b/1", "a", "a/10", "a/é", "dsync:election/x", "a0", "a/1",
	"a/\U0010FFFF", "b/2", "a/\U0010FFFFz", "a/3", "\U0010FFFF", "é",
}

// order is the order in which st lists keys recorded one after the other
// in the order of put, failing t if st declares no order the contract
// knows.
func order(t *testing.T, dir driver.KeyDirectory, put []string) []string {
	t.Helper()
	switch o := dir.KeyOrder(); o {
	case driver.OrderBytes:
		return slices.Sorted(slices.Values(put))
	case driver.OrderFirstUse:
		return slices.Clone(put)
	default:
		t.Fatalf("KeyOrder() = %v, want OrderBytes or OrderFirstUse", o)
		return nil
	}
}

// list reads a whole listing, failing t on an error.
func list(t *testing.T, ctx context.Context, dir driver.KeyDirectory, q driver.KeyQuery) []string {
	t.Helper()
	keys, err := listErr(ctx, dir, q)
	if err != nil {
		t.Fatalf("ListKeys(%s): %v", qs(q), err)
	}
	return keys
}

// qs describes q.
func qs(q driver.KeyQuery) string {
	return fmt.Sprintf("prefix %q, after %q, limit %d", q.Prefix, q.After, q.Limit)
}

// listErr reads a listing up to its end or its first error.
func listErr(ctx context.Context, dir driver.KeyDirectory, q driver.KeyQuery) ([]string, error) {
	var keys []string
	for k, err := range dir.ListKeys(ctx, q) {
		if err != nil {
			return keys, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// putKeys records keys one after the other, each in a request of its
// own.
func putKeys(t *testing.T, ctx context.Context, dir driver.KeyDirectory, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := dir.PutKeys(ctx, []string{k}); err != nil {
			t.Fatalf("PutKeys(%q): %v", k, err)
		}
	}
}

// testPutKeys: recording a key again, or from many processes at once, or
// several keys in one request (some recorded already, one twice),
// succeeds and lists each once; the directory has (HasKey) and lists the
// keys recorded, and only them, whether or not the store holds documents
// of them.
func (s *suite) testPutKeys(t *testing.T) {
	st, ctx := s.store(t)
	dir := need(t, st.Roles().Directory, "Directory")
	if got := list(t, ctx, dir, driver.KeyQuery{}); len(got) != 0 {
		t.Fatalf("a fresh store lists %q, want nothing", got)
	}
	putKeys(t, ctx, dir, "b", "b")
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() { errs[i] = dir.PutKeys(ctx, []string{"a"}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("PutKeys(%q), %d of %d at once: %v", "a", i, len(errs), err)
		}
	}
	// A key with documents that was never recorded is not listed.
	c := claim("ghost", 1, "n", now(st))
	insert(t, ctx, st, c, end(c, driver.KindRelease, now(st)))
	putKeys(t, ctx, dir, "b")
	for key, want := range map[string]bool{"a": true, "b": true, "ghost": false, "c": false, "a/": false} {
		if got, err := dir.HasKey(ctx, key); err != nil || got != want {
			t.Errorf("HasKey(%q) = %v, %v; want %v", key, got, err, want)
		}
	}
	want := order(t, dir, []string{"b", "a"})
	if got := list(t, ctx, dir, driver.KeyQuery{}); !slices.Equal(got, want) {
		t.Errorf("ListKeys after recording b twice, a 16 times at once and b again = %q, want %q (%v)", got, want, dir.KeyOrder())
	}
	// One request with keys recorded already, new ones, and a key twice.
	if err := dir.PutKeys(ctx, []string{"b", "c", "a", "d", "c"}); err != nil {
		t.Errorf("PutKeys of keys new, recorded and repeated: %v", err)
	}
	if err := dir.PutKeys(ctx, nil); err != nil {
		t.Errorf("PutKeys of no keys: %v", err)
	}
	want = order(t, dir, []string{"b", "a", "c", "d"})
	if got := list(t, ctx, dir, driver.KeyQuery{}); !slices.Equal(got, want) {
		t.Errorf("ListKeys after recording b, a, c and d in one request = %q, want %q (%v)", got, want, dir.KeyOrder())
	}
}

// testListKeys: a listing selects by prefix, after and limit, in the
// order the store declares; a store of OrderFirstUse refuses After.
func (s *suite) testListKeys(t *testing.T) {
	st, ctx := s.store(t)
	dir := need(t, st.Roles().Directory, "Directory")
	putKeys(t, ctx, dir, dirKeys...)
	all := order(t, dir, dirKeys)
	if got := list(t, ctx, dir, driver.KeyQuery{}); !slices.Equal(got, all) {
		t.Fatalf("ListKeys() = %q, want %q (%v)", got, all, dir.KeyOrder())
	}
	checkQueryGrid(t, ctx, dir, all)
	if dir.KeyOrder() == driver.OrderBytes {
		checkReferenceCases(t, ctx, dir)
		checkPaging(t, ctx, dir, all)
	}
	if _, err := listErr(ctx, dir, driver.KeyQuery{Limit: -1}); err == nil {
		t.Errorf("ListKeys with limit -1: no error")
	}
}

// selectKeys is what q selects of all (in the store's order): the
// reference a store's listing must match.
func selectKeys(all []string, q driver.KeyQuery) []string {
	var keys []string
	for _, k := range all {
		if strings.HasPrefix(k, q.Prefix) && (q.After == "" || k > q.After) {
			keys = append(keys, k)
		}
	}
	if q.Limit > 0 && len(keys) > q.Limit {
		keys = keys[:q.Limit]
	}
	return keys
}

// checkQueryGrid lists every combination of a set of prefixes, limits
// and afters, and compares each listing with the reference; a store of
// OrderFirstUse must refuse every one that names After.
func checkQueryGrid(t *testing.T, ctx context.Context, dir driver.KeyDirectory, all []string) {
	t.Helper()
	byBytes := dir.KeyOrder() == driver.OrderBytes
	prefixes := []string{"", "a", "a/", "a/1", "a/\U0010FFFF", "a0", "b/", "c", "dsync:", "é", "\U0010FFFF", "a/10x"}
	afters := []string{"", "a", "a/", "a/10", "a/10x", "a/é", "a/zzz", "a0", "b", "\U0010FFFF"}
	for _, prefix := range prefixes {
		for _, limit := range []int{0, 1, 2, 100} {
			for _, after := range afters {
				q := driver.KeyQuery{Prefix: prefix, After: after, Limit: limit}
				got, err := listErr(ctx, dir, q)
				switch {
				case after != "" && !byBytes:
					if !errors.Is(err, driver.ErrAfterUnsupported) || len(got) > 0 {
						t.Errorf("ListKeys(%s) on a store of %v = %q, %v; want nothing and ErrAfterUnsupported", qs(q), dir.KeyOrder(), got, err)
					}
				case err != nil:
					t.Errorf("ListKeys(%s): %v", qs(q), err)
				case !slices.Equal(got, selectKeys(all, q)):
					t.Errorf("ListKeys(%s) = %q, want %q", qs(q), got, selectKeys(all, q))
				}
			}
		}
	}
}

// checkReferenceCases checks the reference itself, in a few cases
// written out, on a store of OrderBytes.
func checkReferenceCases(t *testing.T, ctx context.Context, dir driver.KeyDirectory) {
	t.Helper()
	for _, c := range []struct {
		q    driver.KeyQuery
		want []string
	}{
		{driver.KeyQuery{Prefix: "a/"}, []string{"a/1", "a/10", "a/2", "a/3", "a/é", "a/\U0010FFFF", "a/\U0010FFFFz"}},
		{driver.KeyQuery{Prefix: "a/", After: "a/10", Limit: 2}, []string{"a/2", "a/3"}},
		{driver.KeyQuery{Prefix: "a", After: "a/\U0010FFFF"}, []string{"a/\U0010FFFFz", "a0"}},
		{driver.KeyQuery{Prefix: "b/", After: "a/zzz"}, []string{"b/1", "b/2"}},
	} {
		if got := list(t, ctx, dir, c.q); !slices.Equal(got, c.want) {
			t.Errorf("ListKeys(%s) = %q, want %q", qs(c.q), got, c.want)
		}
	}
}

// checkPaging pages through every key, one and three at a time, on a
// store of OrderBytes.
func checkPaging(t *testing.T, ctx context.Context, dir driver.KeyDirectory, all []string) {
	t.Helper()
	for _, limit := range []int{1, 3} {
		var got []string
		for after := ""; len(got) <= len(all); {
			page := list(t, ctx, dir, driver.KeyQuery{After: after, Limit: limit})
			if len(page) > limit {
				t.Fatalf("ListKeys(after %q, limit %d) = %q: more than the limit", after, limit, page)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1]
		}
		if !slices.Equal(got, all) {
			t.Errorf("paging %d at a time = %q, want %q", limit, got, all)
		}
	}
}

// streamKeys is how many keys testListKeysStream records: more than a
// store may read at once.
const streamKeys = 600

// testListKeysStream: a long listing is read as the caller goes: it ends
// when the caller stops, with an error soon after its context ends, and
// lists each key once.
func (s *suite) testListKeysStream(t *testing.T) {
	st, ctx := s.store(t)
	dir := need(t, st.Roles().Directory, "Directory")
	keys := make([]string, streamKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("stream/%04d", (i*7)%streamKeys)
	}
	var wg sync.WaitGroup
	const procs = 8
	for p := range procs {
		wg.Go(func() {
			for i := p; i < len(keys); i += procs {
				if err := dir.PutKeys(ctx, []string{keys[i]}); err != nil {
					t.Errorf("PutKeys(%q): %v", keys[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	got := list(t, ctx, dir, driver.KeyQuery{})
	if dir.KeyOrder() == driver.OrderBytes && !slices.IsSorted(got) {
		t.Errorf("ListKeys() of a store of OrderBytes is not in order: %q", got)
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
		t.Errorf("ListKeys() listed %d keys (%d distinct), want each of the %d recorded once", len(got), len(slices.Compact(got)), len(want))
	}

	checkStopsEarly(t, ctx, dir)
	checkContextEnds(t, ctx, dir)
}

// checkStopsEarly: the caller stops early, so the listing ends (ranging
// over it would panic if it went on), and the store serves the next one.
func checkStopsEarly(t *testing.T, ctx context.Context, dir driver.KeyDirectory) {
	t.Helper()
	n := 0
	for _, err := range dir.ListKeys(ctx, driver.KeyQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 150 {
			break
		}
	}
	if got := list(t, ctx, dir, driver.KeyQuery{Limit: 3}); len(got) != 3 {
		t.Errorf("ListKeys(limit 3) after a listing stopped early = %q, want 3 keys", got)
	}
}

// checkContextEnds: the context ends after the first key, so the
// listing reads no further batch, and reports it.
func checkContextEnds(t *testing.T, ctx context.Context, dir driver.KeyDirectory) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	n := 0
	var end error
	for _, err := range dir.ListKeys(cctx, driver.KeyQuery{}) {
		if err != nil {
			end = err
			break
		}
		n++
		cancel()
	}
	cancel()
	if end == nil || n >= streamKeys {
		t.Errorf("a listing whose context ended after its first key listed %d of %d keys and ended with %v; want an error before the end (a store reads at most 500 keys at a time)", n, streamKeys, end)
	}
	if _, err := listErr(cctx, dir, driver.KeyQuery{}); err == nil {
		t.Errorf("a listing with a context that has ended: no error")
	}
}
