package memory

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Wait notes and deadlock records (driver.WaitStore, driver.DeadlockStore):
// the first record of each ID, never changed. A record's slices are
// copied in and out, so that neither the sender nor a reader can change
// what is stored. The store keeps them until Reset.

// errNoSet is what PutWait and PutDeadlock answer for a record that names
// no set or a note 0: its ID would name no note of any set.
var errNoSet = errors.New("memory: a wait note or deadlock record needs a set and a note number from 1")

// PutWait implements driver.WaitStore.
func (r roles) PutWait(ctx context.Context, w driver.Wait) error {
	if w.Set == "" || w.N == 0 {
		return errNoSet
	}
	w.Holds = slices.Clone(w.Holds)
	var exists bool
	if err := r.s.do(ctx, Call{Op: "PutWait", Write: true, Session: driver.Session{ID: w.Session}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		if _, exists = r.s.waits[w.Set][w.N]; exists {
			return
		}
		if r.s.waits == nil {
			r.s.waits = make(map[string]map[uint64]driver.Wait)
		}
		if r.s.waits[w.Set] == nil {
			r.s.waits[w.Set] = make(map[uint64]driver.Wait)
		}
		r.s.waits[w.Set][w.N] = w
	}); err != nil {
		return err
	}
	if exists {
		return driver.ErrExists
	}
	return nil
}

// LatestWait implements driver.WaitStore.
func (r roles) LatestWait(ctx context.Context, set string) (driver.Wait, bool, error) {
	var (
		w     driver.Wait
		found bool
	)
	if err := r.s.do(ctx, Call{Op: "LatestWait", Keys: []string{set}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for n, note := range r.s.waits[set] {
			if !found || n > w.N {
				w, found = note, true
			}
		}
	}); err != nil {
		return driver.Wait{}, false, err
	}
	w.Holds = slices.Clone(w.Holds)
	return w, found, nil
}

// ListWaits implements driver.WaitStore. The notes come in the order of
// their At.
func (r roles) ListWaits(ctx context.Context, since time.Time) ([]driver.Wait, error) {
	var out []driver.Wait
	if err := r.s.do(ctx, Call{Op: "ListWaits"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for _, notes := range r.s.waits {
			for _, w := range notes {
				if !w.At.Before(since) {
					w.Holds = slices.Clone(w.Holds)
					out = append(out, w)
				}
			}
		}
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b driver.Wait) int { return a.At.Compare(b.At) })
	return out, nil
}

// PutDeadlock implements driver.DeadlockStore.
func (r roles) PutDeadlock(ctx context.Context, d driver.Deadlock) error {
	if d.Victim == "" || d.N == 0 {
		return errNoSet
	}
	d.Cycle = slices.Clone(d.Cycle)
	id := driver.DeadlockID(d.Victim, d.N)
	var exists bool
	if err := r.s.do(ctx, Call{Op: "PutDeadlock", Write: true, Session: driver.Session{ID: d.Session}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		if _, exists = r.s.deadlocks[id]; exists {
			return
		}
		if r.s.deadlocks == nil {
			r.s.deadlocks = make(map[string]driver.Deadlock)
		}
		r.s.deadlocks[id] = d
	}); err != nil {
		return err
	}
	if exists {
		return driver.ErrExists
	}
	return nil
}

// ListDeadlocks implements driver.DeadlockStore. The records come in the
// order of their At.
func (r roles) ListDeadlocks(ctx context.Context, since time.Time) ([]driver.Deadlock, error) {
	var out []driver.Deadlock
	if err := r.s.do(ctx, Call{Op: "ListDeadlocks"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for _, d := range r.s.deadlocks {
			if !d.At.Before(since) {
				d.Cycle = slices.Clone(d.Cycle)
				out = append(out, d)
			}
		}
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b driver.Deadlock) int { return a.At.Compare(b.At) })
	return out, nil
}
