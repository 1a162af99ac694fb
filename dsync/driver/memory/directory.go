package memory

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The directory of keys (driver.KeyDirectory): a set, listed in
// increasing order of the keys' bytes, a batch at a time.

// listBatch is how many keys a listing takes from the store at a time,
// under the store's lock.
const listBatch = 100

// directory is the set of keys recorded. Guarded by state.mu.
type directory struct {
	keys   map[string]struct{}
	sorted []string // the keys in order, while not stale
	stale  bool     // keys were added since sorted was made
}

func (d *directory) put(key string) {
	if d.keys == nil {
		d.keys = make(map[string]struct{})
	}
	if _, ok := d.keys[key]; !ok {
		d.keys[key] = struct{}{}
		d.stale = true
	}
}

// order returns the keys in order. Sorting once per burst of puts keeps a
// put O(1), as it is on the MongoDB driver.
func (d *directory) order() []string {
	if d.stale {
		d.sorted = slices.Sorted(func(yield func(string) bool) {
			for k := range d.keys {
				if !yield(k) {
					return
				}
			}
		})
		d.stale = false
	}
	return d.sorted
}

// all returns a copy of the keys, in order.
func (d *directory) all() []string { return slices.Clone(d.order()) }

// reset replaces the keys with keys.
func (d *directory) reset(keys []string) {
	d.keys = make(map[string]struct{}, len(keys))
	for _, k := range keys {
		d.keys[k] = struct{}{}
	}
	d.sorted, d.stale = nil, true
}

// next returns up to n keys that begin with prefix, from from on (after
// it, unless inclusive).
func (d *directory) next(from string, inclusive bool, prefix string, n int) []string {
	sorted := d.order()
	i, found := slices.BinarySearch(sorted, from)
	if found && !inclusive {
		i++
	}
	var batch []string
	for ; i < len(sorted) && len(batch) < n; i++ {
		if !strings.HasPrefix(sorted[i], prefix) {
			break // the keys with prefix are contiguous, and from >= prefix
		}
		batch = append(batch, sorted[i])
	}
	return batch
}

// PutKeys implements driver.KeyDirectory.
func (r roles) PutKeys(ctx context.Context, keys []string) error {
	return r.s.do(ctx, Call{Op: "PutKeys", Write: true, Keys: keys}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for _, key := range keys {
			r.s.dir.put(key)
		}
	})
}

// HasKey implements driver.KeyDirectory.
func (r roles) HasKey(ctx context.Context, key string) (bool, error) {
	var ok bool
	if err := r.s.do(ctx, Call{Op: "HasKey", Keys: []string{key}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		_, ok = r.s.dir.keys[key]
	}); err != nil {
		return false, err
	}
	return ok, nil
}

// KeyOrder implements driver.KeyDirectory: driver.OrderBytes.
func (roles) KeyOrder() driver.KeyOrder { return driver.OrderBytes }

// ListKeys implements driver.KeyDirectory: a batch of keys at a time,
// each taken under the store's lock. The view's hooks see the listing
// once, as it begins.
func (r roles) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	s := r.s
	return func(yield func(string, error) bool) {
		if err := s.do(ctx, Call{Op: "ListKeys", Keys: []string{q.Prefix}}, func() {}); err != nil {
			yield("", err)
			return
		}
		if q.Limit < 0 {
			yield("", fmt.Errorf("memory: negative limit %d", q.Limit))
			return
		}
		from, inclusive := q.Prefix, true
		if q.After >= q.Prefix {
			from, inclusive = q.After, false
		}
		listed := 0
		for {
			n := listBatch
			if q.Limit > 0 {
				n = min(n, q.Limit-listed)
			}
			if n == 0 {
				return
			}
			if err := live(ctx); err != nil {
				yield("", err)
				return
			}
			s.mu.Lock()
			batch := s.dir.next(from, inclusive, q.Prefix, n)
			s.mu.Unlock()
			for _, k := range batch {
				if !yield(k, nil) {
					return
				}
			}
			listed += len(batch)
			if len(batch) < n {
				return
			}
			from, inclusive = batch[len(batch)-1], false
		}
	}
}

// Keys returns the keys recorded, in order.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir.all()
}
