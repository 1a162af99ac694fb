package wake

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Settling the feed in the background (Env.Settle). Deciding whether a
// Client takes direct hints by default asks the store how it is reached
// (commands to the server), and hints then need the hint key and the
// peers' records (more): none of that is on the path of a Lock. The Hub
// settles once the first of its Client's claims ends, once a waiter of
// its starts to wait (it may be woken sooner by hints), or settleAfter
// after Start, whichever comes first: a short-lived process (a CLI, a
// cron job) that locks once, uncontended, sends its first Lock+Unlock
// the commands it would send without hints, and, if it closes at once,
// none for the hints.
//
// Until it is settled, the Hub is as one whose store's stream is not
// live yet: waiters poll, nothing is announced or published, and the
// claims of ours made and ended meanwhile are kept as the owner keeps
// those made before the stream turned live (owner.live publishes the
// ends whose announcements the stream may not replay). That costs
// speed, never safety: hints and events only wake waiters sooner, and
// waiters look at the store anyway. Once settled, the Hub follows the
// feed settled and its waiters look again (announcing themselves, with
// hints, at once).

// settleAfter bounds how long a Client with a first claim that holds
// on, and no waiter, goes without its feed settled.
const settleAfter = LostWindow

// errNotSettled: an announcement before the feed is settled, which it
// does not wait for (the waiter polls, and looks again once it is).
var errNotSettled = errors.New("wake: the feed is not settled yet")

// settler runs the Hub's settling (Env.Settle): kick starts it early,
// cancel ends it, done counts it; stopped: it is not to start, or to
// adopt what it settled (guarded by the Hub's lock).
type settler struct {
	kick    chan struct{}
	cancel  context.CancelFunc
	done    sync.WaitGroup
	stopped bool
}

// settleLater settles the feed in a goroutine that Close ends and waits
// for; Start calls it once.
func (h *Hub) settleLater() {
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		cancel()
		return
	}
	h.cancel = cancel
	h.done.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.done.Done()
		defer cancel()
		t := time.NewTimer(settleAfter)
		defer t.Stop()
		select {
		case <-h.kick:
		case <-t.C:
		case <-ctx.Done():
			return
		}
		h.adopt(h.env.Settle(ctx))
	}()
}

// settleSoon starts settling now, if it waits (a claim of ours ended, or
// a waiter starts to wait).
func (h *Hub) settleSoon() {
	if h.cur.Load() == nil {
		notify(h.kick)
	}
}

// adopt takes s as the feed and follows it, unless the Hub closed.
func (h *Hub) adopt(s Settled) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return // s's feed was never followed: it holds nothing
	}
	h.cur.Store(&s)
	h.mu.Unlock()
	if s.Feed == nil {
		return
	}
	h.follow(s)
	// Waiters that began before announced nothing: they look again.
	h.waiters.wakeAll()
}

// StopSettling ends the settling, if under way, and waits for it; none
// starts after. A Client calls it first as it closes: it need not ask
// the store anything more, nor record itself for hints (Close ends the
// claims before it closes the Hub, and their ends would start it).
func (h *Hub) StopSettling() {
	h.mu.Lock()
	h.stopped = true
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	h.done.Wait()
}

// feed is the feed settled (nil: none, or not settled yet).
func (s *shared) feed() driver.Feed {
	if c := s.cur.Load(); c != nil {
		return c.Feed
	}
	return nil
}

// feedless reports whether the feed is settled, and there is none:
// waiters poll, and nothing is kept for announcements.
func (s *shared) feedless() bool {
	c := s.cur.Load()
	return c != nil && c.Feed == nil
}

// direct reports whether the feed settled carries direct hints.
func (s *shared) direct() bool {
	c := s.cur.Load()
	return c != nil && c.Direct
}

// peers is where processes that take hints are recorded, for a Client
// settled without them (nil: none, or not settled yet).
func (s *shared) peers() driver.PeerStore {
	if c := s.cur.Load(); c != nil {
		return c.Peers
	}
	return nil
}

// replay is how far back the feed settled replays events (0: none).
func (s *shared) replay() time.Duration {
	if f := s.feed(); f != nil {
		return f.Replay()
	}
	return 0
}
