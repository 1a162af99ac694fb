package apisim

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The operator's revokes (dsync revoke): in the seeds that have them, at
// any moment (every 0.5 to 4 s of fake time) he revokes a session whose
// lease has not expired, drawn from all the processes' (elections'
// included), holding or not. A revoke inserts its record in the store and
// writes nothing else (driver.RevokeStore); the processes read it through
// their faulty networks (procStore.Revoked). The checkers are the usual
// ones: the oracle's deadlines come from the confirmed renewals, which a
// revoke does not touch, so a revoked holder must stop by them, and
// nobody else may hold before its lease expired in store time.

// revokeSeed tells the revokes' random numbers from the world's: a seed's
// other draws are what they were before revokes existed.
const revokeSeed = 0x7265766f6b65

// revoker revokes sessions until end, if the seed has revokes.
func (w *world) revoker(end time.Time) {
	rng := w.revokeRng
	if rng == nil {
		return
	}
	for {
		time.Sleep(500*time.Millisecond + time.Duration(rng.Int64N(int64(3500*time.Millisecond))))
		if !time.Now().Before(end) {
			return
		}
		ids := w.sess.live(time.Now())
		if len(ids) == 0 {
			continue
		}
		id := ids[rng.IntN(len(ids))]
		r := driver.Revocation{Session: id, By: "operator", Reason: "apisim", At: w.mem.ServerTime().Latest}
		if err := w.mem.Roles().Revocations.Revoke(context.Background(), r); err != nil {
			continue // revoked already
		}
		w.tracef("REVOKE %s", id)
		w.mu.Lock()
		w.fig.Revokes++
		w.revoked[id] = time.Now()
		w.mu.Unlock()
	}
}

// newRevokeRng returns the revokes' random numbers of seed, or nil if the
// seed has none (four seeds in ten have none).
func newRevokeRng(seed int64) *rand.Rand {
	rng := rand.New(rand.NewPCG(uint64(seed), revokeSeed))
	if rng.Float64() < 0.4 {
		return nil
	}
	return rng
}

// live returns, sorted, the sessions with a generation that has not
// expired at now.
func (s *sessions) live(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, gens := range s.gens {
		for _, exp := range gens {
			if exp.After(now) {
				ids = append(ids, id)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// Revoked implements driver.RevokeStore through the process's network.
func (s *procStore) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	var r driver.Revocation
	var found bool
	if err := s.request(ctx, "get-revocation", func(plan) {
		r, found, _ = s.mem().Revocations.Revoked(context.Background(), session)
		s.p.w.tracef("%s get-revocation %s: %v", s.name(), session, found)
	}, nil); err != nil {
		return driver.Revocation{}, false, err
	}
	return r, found, nil
}

// countRevokedLosses counts the holds that were under way when their
// session was revoked and were lost after it (Figures.RevokedLosses),
// and how long after the revoke the latest of those Lost() closed.
// Called with w.mu held, after the run.
func (w *world) countRevokedLosses() {
	for _, h := range w.hist.Holds {
		at, ok := w.revoked[h.Session]
		if !ok || h.Start.After(at) || !h.Ended.IsZero() && h.Ended.Before(at) || h.LostAt.IsZero() || h.LostAt.Before(at) {
			continue
		}
		w.fig.RevokedLosses++
		w.fig.RevokedLostAfter = max(w.fig.RevokedLostAfter, h.LostAt.Sub(at))
	}
}
