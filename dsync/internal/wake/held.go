package wake

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Held hints, with direct hints on (ClientWithHints). The owner of a
// claim that another process announced it waits for tells that process,
// at once and then every half poll interval until the claim ends, that
// the claim has not ended (driver.Held, carried by hints only, to the
// processes that announced they wait for that claim). A waiter that
// hears so sleeps past its poll interval for as long as it keeps
// hearing so (Hub.lookAt): the Held hints are what tells it that
// hints from that owner reach it. An end lost, or Held hints lost, cost
// it at most the poll interval: it looks once a poll interval has passed
// since the last Held it heard. A waiter behind a claim of its own
// process is woken directly, and sleeps as long.
//
// Each Held hint also carries the highest expiry of the claim's session
// that the store confirmed to its owner (driver.Event.Until, store
// time): the session's stored expiry is at least that, since a stored
// expiry never goes down. A waiter reads the claim's session only once
// the latest such expiry has passed (wait.go), not each time the expiry
// it last read has: while the owner's renewals are confirmed, an idle
// waiter never reads it (it read it once per TTL or so). A Held hint
// that comes late, or again, carries an expiry no later than one it
// carried before, so it can never put a read off past the session's
// stored expiry: the waiter keeps the latest (registry.heardHeld). Nor
// can a forged one (sent by whoever can read the hint key from the
// store) put it off by more than a TTL past the moment it came: a waiter
// takes an expiry up to one TTL of its own past the store's latest
// possible time, which no confirmed renewal of a Client of its TTL
// exceeds. An owner of an older release sends no expiry (zero), and a
// waiter of an older release ignores it: either way the waiter reads the
// session as before.
//
// This is what lets a process that hints reach stop reading the store's
// stream (dsync/hint's pause.go): its waiters need the stream no more
// than they need polls.
//
// Here is the owner's side: the sender. What a waiter heard is the
// registry's (registry.go), and what it does with it, the wait's
// (wait.go).

// heldSender sends our Held hints. It reads which are due, and the
// session of each claim, from the owner (under the owner's lock, never
// its own); its lock guards whether its loop runs.
type heldSender struct {
	*shared
	owner *owner
	// kicked wakes the loop; quit stops it.
	kicked, quit chan struct{}

	mu      sync.Mutex
	stopped bool
	done    chan struct{} // closed when the loop returned; nil: none ran
}

func newHeldSender(s *shared, o *owner) *heldSender {
	return &heldSender{shared: s, owner: o, kicked: make(chan struct{}, 1), quit: make(chan struct{})}
}

// every is how often the owner of a claim that is waited for sends its
// Held hints: twice per poll interval, so that one may be late without
// costing the waiter a look.
func (s *heldSender) every() time.Duration { return max(s.env.Poll/2, time.Millisecond) }

// start runs the loop that sends our Held hints, once, unless stop was
// called.
func (s *heldSender) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.done != nil {
		return
	}
	s.done = make(chan struct{})
	go s.loop(s.done)
}

// stop stops the loop, and waits for it to return.
func (s *heldSender) stop() {
	s.mu.Lock()
	done := s.done
	if !s.stopped {
		s.stopped = true
		close(s.quit)
	}
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// kick tells the loop that Held hints may have become due.
func (s *heldSender) kick() { notify(s.kicked) }

// send tells the processes that wait for k that it has not ended, and
// until when its session lasts at least: its highest expiry that the
// store confirmed to us (zero if unknown).
func (s *heldSender) send(k ClaimID) {
	session, ours := s.owner.session(k)
	var lasts time.Time
	if ours && session != "" && s.env.Confirmed != nil {
		lasts = s.env.Confirmed(session)
	}
	e := driver.Event{Kind: driver.Held, Key: k.Key, Epoch: k.Epoch, Until: lasts, Proc: s.proc}
	_ = s.feed().Publish(context.Background(), e) // hints only, best effort
}

// loop sends our Held hints every interval while some are due, until
// stop; kicked when one may have become due.
func (s *heldSender) loop(done chan struct{}) {
	defer close(done)
	t := time.NewTimer(0)
	<-t.C
	for {
		due := s.owner.heldDue(s.env.Now().Earliest)
		if len(due) == 0 {
			select {
			case <-s.quit:
				return
			case <-s.kicked:
				continue
			}
		}
		for _, k := range due {
			s.send(k)
		}
		t.Reset(s.every())
		select {
		case <-s.quit:
			t.Stop()
			return
		case <-t.C:
		}
	}
}
