package queue_test

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

var _ driver.RunReader = net{}

// GetRun reads a run as a server scanning an index does (for owners of
// even pid; the others are told the store has no runs), in the weakest
// order driver.RunReader allows: from the time the request arrives, one
// epoch at a time, in order, each epoch's claim and then its markers a
// step apart, so that other requests land between its reads (an insert,
// a prune, an emptying). Of an epoch's markers it reads the one of the
// claim it read: a marker of another nonce ends no claim a walk reads. Steps are short, and now and then as long as a
// request's leg. The reply follows the last read.
func (n net) GetRun(ctx context.Context, key string, from, to uint64) (run []queue.Doc, err error) {
	s, a := n.s, ctx.Value(actorKey{}).(*actor)
	if a.o.pid%2 == 1 {
		// Half the owners walk by ID, as on a store without runs
		// (FerretDB): both walks meet in every simulated key.
		return nil, driver.ErrRunsUnsupported
	}
	store := s.server.store
	var woken, timedOut bool
	sent := s.now
	gap := func() time.Duration {
		if s.rng.Float64() < 0.05 {
			return s.delay()
		}
		return time.Duration(s.rng.Int64N(int64(200 * time.Microsecond)))
	}
	reply := func() {
		s.server.inflight--
		s.tracef("  run %s %d..%d applied for %s (sent %v): %d documents", key, from, to, a.o.name, sent, len(run))
		s.at(s.now+s.delay(), func() {
			if !woken {
				woken = true
				s.step(a)
			}
		})
	}
	// next reads, at epoch e or above, the next claim (claim nil), or the
	// marker of the claim read (a marker of another nonce ends no claim
	// the walker reads, and is left out).
	var next func(e uint64, claim *queue.Doc)
	next = func(e uint64, claim *queue.Doc) {
		if claim != nil {
			if m, ok, _ := store.Get(bg, queue.EndID(key, e, claim.Nonce)); ok {
				run = append(run, m)
			}
			s.at(s.now+gap(), func() { next(e+1, nil) })
			return
		}
		for ; e <= to; e++ {
			if d, ok, _ := store.Get(bg, queue.ClaimID(key, e)); ok && d.Kind == queue.KindClaim {
				run = append(run, d)
				s.at(s.now+gap(), func() { next(e, &d) })
				return
			}
		}
		reply()
	}
	s.server.inflight++
	s.at(s.now+s.delay(), func() {
		if timedOut {
			s.stats.late++
		}
		next(from, nil)
	})
	s.at(s.now+simTimeout, func() {
		if !woken {
			woken, timedOut = true, true
			s.step(a)
		}
	})
	a.block()
	if timedOut {
		return nil, errSimTimeout
	}
	return run, nil
}
