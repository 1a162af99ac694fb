package queue_test

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// Stuck workers. A dsync hold with a progress deadline whose work stops
// reporting is stalled: its holder stops relying on it, and the margin
// later its claim is released, while the session keeps renewing for the
// process's other claims; the worker may then claim the key again in the
// same session. On half the seeds a worker's hold now and then ends so,
// and its release is held back in the network until that later claim of
// the key has landed (rule 11: a write may land after its sender's later
// writes): the late release must end the stalled claim, and nothing of
// the later one.
//
// The draws come from a stream of their own, so that the other seeds run
// exactly as they did before.

// simStuck is a seed's stuck workers.
type simStuck struct {
	rng  *rand.Rand           // nil: none on this seed
	held map[string]*stuckEnd // the releases held back, by their marker's ID
}

// stuckEnd is a stalled claim's release, held back.
type stuckEnd struct {
	o            *owner
	session, key string
	sent         bool // its first send is on its way
	landable     bool // the later claim of its key landed
}

func newSimStuck(seed int64) *simStuck {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x57c4))
	if rng.IntN(2) != 0 {
		return &simStuck{}
	}
	return &simStuck{rng: rng, held: map[string]*stuckEnd{}}
}

// stalls reports whether a hold that began will stall.
func (st *simStuck) stalls() bool { return st.rng != nil && st.rng.Float64() < 0.05 }

// hold holds back the release of c, which stalled in session ss of o.
func (st *simStuck) hold(o *owner, c *queue.Claim, session string) {
	st.held[queue.EndID(c.Key, c.Epoch, c.Nonce)] = &stuckEnd{o: o, session: session, key: c.Key}
}

// claimed tells that o's claim of key in session landed: the releases
// of that session's stalled claims of key may land now.
func (st *simStuck) claimed(o *owner, session, key string) {
	for _, h := range st.held {
		if h.o == o && h.session == session && h.key == key && h.sent {
			h.landable = true
		}
	}
}

// insert sends d, a held-back release, if h holds it: its first send
// lands once the later claim landed (or its owner crashed, or 4 TTLs
// later), a delay after; every send fails at once meanwhile, the request
// on its way, so that the engine sends it again (and those land when
// they arrive, after it).
func (st *simStuck) insert(ctx context.Context, s *sim, h *stuckEnd, d queue.Doc) error {
	a := ctx.Value(actorKey{}).(*actor)
	if !h.sent {
		h.sent = true
		s.server.inflight++
		sent, until := s.now, s.now+4*simTTL
		var try func()
		try = func() {
			if !h.landable && !h.o.crashed && s.now < until {
				s.at(s.now+5*time.Millisecond, try)
				return
			}
			s.server.inflight--
			delete(st.held, d.ID)
			if s.server.lastReset > sent {
				return // lost with the store's reset
			}
			s.stats.late++
			if h.landable {
				s.stats.stuckLate++
			}
			err := s.server.store.Insert(bg, d)
			s.tracef("stuck release lands %v -> %v", d, err)
		}
		s.at(s.now+time.Millisecond, try)
	}
	a.sleep(time.Millisecond)
	return errSimReset
}
