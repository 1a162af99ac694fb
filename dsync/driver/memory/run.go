package memory

import (
	"cmp"
	"context"
	"slices"

	"github.com/go-dsync/dsync/dsync/driver"
)

// GetRun implements driver.RunReader: the whole run is read at one
// instant, epoch by epoch when the run has fewer epochs than the store
// has documents, else by a pass over them all.
func (r roles) GetRun(ctx context.Context, key string, from, to uint64) ([]driver.Doc, error) {
	var run []driver.Doc
	if err := r.s.do(ctx, Call{Op: "GetRun", Keys: []string{key}, From: from, To: to}, func() { run = r.s.run(key, from, to) }); err != nil {
		return nil, err
	}
	return run, nil
}

// run reads the run of key from from to to: epoch by epoch when the run
// has fewer epochs than the store has documents, else by a pass over them
// all.
func (s *state) run(key string, from, to uint64) []driver.Doc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from <= to && to-from < uint64(len(s.docs)) {
		return s.runByEpoch(key, from, to)
	}
	return s.runByPass(key, from, to)
}

// runByEpoch reads the run of key from from to to by ID: each epoch's
// claim, and the marker of its nonce (a marker of another nonce ends no
// claim stored). s.mu must be held.
func (s *state) runByEpoch(key string, from, to uint64) []driver.Doc {
	var run []driver.Doc
	for e := from; ; e++ {
		if c, ok := s.docs[driver.ClaimID(key, e)]; ok && c.Kind == driver.KindClaim {
			run = append(run, c)
			if m, ok := s.docs[driver.EndID(key, e, c.Nonce)]; ok {
				run = append(run, m)
			}
		}
		if e == to {
			break
		}
	}
	return run
}

// runByPass reads the run of key from from to to by a pass over every
// document, in the run's order: by epoch, each epoch's claim before its
// markers, markers by ID. s.mu must be held.
func (s *state) runByPass(key string, from, to uint64) []driver.Doc {
	var run []driver.Doc
	for _, d := range s.docs {
		if d.Key == key && d.Epoch >= from && d.Epoch <= to && inRun(d.Kind) {
			run = append(run, d)
		}
	}
	slices.SortFunc(run, func(a, b driver.Doc) int {
		if c := cmp.Compare(a.Epoch, b.Epoch); c != 0 {
			return c
		}
		if (a.Kind == driver.KindClaim) != (b.Kind == driver.KindClaim) {
			if a.Kind == driver.KindClaim {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return run
}

// inRun reports whether a document of kind belongs in a run: a claim or
// an end marker.
func inRun(kind string) bool {
	switch kind {
	case driver.KindClaim, driver.KindRelease, driver.KindWithdraw, driver.KindDead:
		return true
	}
	return false
}
