package wake

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The announcer: a waiter tells the other processes which claim it waits
// for, once for each claim (again only after its stream was down, or
// when the announcement is about to lapse, an hour on), and the owner of
// that claim keeps the announcement until the claim ends. An announcement
// repeated every interval would cost each of W waiters W events per
// interval, a term that grew with the square of the waiters
// (bench/RESULTS.md, Scale).

// An announcement is one of our Waiting events: until when it holds (store
// time), and when it was sent (local monotonic).
type announcement struct {
	until time.Time
	sent  time.Duration
	last  time.Duration // when it was last sent (local monotonic)
	// direct: made while the store's stream was not live, so only direct
	// hints carried it: made again once the stream is live.
	direct bool
	// need: the need it told (driver.Event.Need), or told again since.
	need uint64
}

// announcer is what this process announced it waits for. Its lock guards
// its maps; no other lock is taken under it.
type announcer struct {
	*shared
	// trusted reports whether a waiter for a claim hears from its owner
	// (Hub.trusted): an announcement it does not answer may have been
	// lost. Called under no lock.
	trusted func(ClaimID) bool

	mu        sync.Mutex
	announced map[ClaimID]announcement
	// announcedBy: for a claim of ours that waits and announced it, the
	// claim it announced it waits for, until it holds or ends.
	announcedBy map[ClaimID]ClaimID
}

func newAnnouncer(s *shared, trusted func(ClaimID) bool) *announcer {
	return &announcer{
		shared:      s,
		trusted:     trusted,
		announced:   make(map[ClaimID]announcement),
		announcedBy: make(map[ClaimID]ClaimID),
	}
}

// get returns our announcement for k, if one was made.
func (a *announcer) get(k ClaimID) (announcement, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	an, ok := a.announced[k]
	return an, ok
}

// announce tells the other processes that this one waits for k, with its
// own claim of k's key of the epoch own (0: none to tell), and how many
// ends it needs (driver.Event.Need), unless an announcement of ours still
// holds for more than a safety poll interval (it holds holdFor: once per
// claim waited for, in practice); but a need that dropped to 1 from
// more is told again at once, by direct hints only (retell). It returns
// the age of the announcement in force.
func (a *announcer) announce(ctx context.Context, k ClaimID, own, need uint64) (time.Duration, error) {
	now := a.env.Now()
	an, ok := a.get(k)
	healthy := a.healthy.Load()
	if ok && an.direct && healthy {
		ok = false // the store's stream never carried it
	}
	if ok && a.stands(k, an, now) {
		if an.need > 1 && need == 1 {
			a.retell(k, an, own)
		}
		return a.env.Mono() - an.sent, nil
	}
	sent, again := a.env.Mono(), ok && an.until.After(now.Earliest)
	if again {
		// Announcing again while the last announcement holds: the owner
		// has heard of us since then (or lost the event, as it may lose
		// this one), so the looks that follow a first announcement are
		// not needed again. Its age runs from the first.
		sent = an.sent
		// Another waiter of ours for k may need fewer ends: the least
		// need told stands.
		need = min(need, an.need)
	}
	until := now.Earliest.Add(a.holdFor())
	e := driver.Event{Kind: driver.Waiting, Key: k.Key, Epoch: k.Epoch, Until: until, Own: own, Need: need, Proc: a.proc}
	f := a.feed()
	if f == nil {
		return 0, errNotSettled
	}
	if err := f.Publish(ctx, e); err != nil {
		a.env.Logger.Debug("dsync: announcing a waiter failed", slog.Any("err", err))
		return 0, err
	}
	a.record(k, own, announcement{until: until, sent: sent, last: a.env.Mono(), direct: !healthy, need: need})
	if again {
		return a.env.Mono() - sent, nil
	}
	return 0, nil
}

// stands reports whether an, our announcement for k, need not be made
// again yet: it holds for more than a safety poll interval from now (store
// time), and its owner is not found to have missed it (unheard).
func (a *announcer) stands(k ClaimID, an announcement, now driver.Interval) bool {
	return an.until.Sub(now.Latest) > a.env.SafetyPoll && !a.unheard(k, an)
}

// record keeps an as our announcement for k, sent for our claim of k's
// key of the epoch own (0: none), until that claim holds or ends. Either
// map, full, is cleared rather than grown: an announcement forgotten is
// made again, a withdrawal forgotten goes unsaid.
func (a *announcer) record(k ClaimID, own uint64, an announcement) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.announced) >= maxRemote {
		clear(a.announced)
	}
	a.announced[k] = an
	if own != 0 {
		if len(a.announcedBy) >= maxRemote {
			clear(a.announcedBy) // their withdrawals go unsaid
		}
		a.announcedBy[ClaimID{k.Key, own}] = k
	}
}

// A teller is a feed that can send an event by direct hints only
// (hint.Feed.Tell).
type teller interface {
	Tell(e driver.Event) bool
}

// needOne tells the owner of k, if our announcement for it holds and
// told a need of more than one end, that this process needs only k's
// end now (retell): a waiter of ours heard of an end that leaves it one
// short. Nothing else: the next walk's wait announces what is due.
func (a *announcer) needOne(k ClaimID, own uint64) {
	an, ok := a.get(k)
	if ok && an.need > 1 && an.until.After(a.env.Now().Latest) {
		a.retell(k, an, own)
	}
}

// retell tells the owner of k again that this process waits for it, an,
// with a need of 1 now: a waiter that only counted k's end (it needed
// more ends) may hold on it now, so the owner is to send it at once,
// not later (dsync/hint's endDefer). By direct hints only
// (hint.Feed.Tell): the store's feed carries no need, and is sent
// nothing more. If no hint could be sent, the need told stays as it
// was, and the waiter's next announce tries again; a retelling lost
// costs at most the owner's delay.
func (a *announcer) retell(k ClaimID, an announcement, own uint64) {
	t, ok := a.feed().(teller)
	if !ok {
		return
	}
	e := driver.Event{Kind: driver.Waiting, Key: k.Key, Epoch: k.Epoch, Until: an.until, Own: own, Need: 1, Proc: a.proc}
	if !t.Tell(e) {
		return
	}
	a.mu.Lock()
	if cur, ok := a.announced[k]; ok && cur.until.Equal(an.until) {
		cur.need, cur.last = 1, a.env.Mono()
		a.announced[k] = cur
	}
	a.mu.Unlock()
}

// unheard reports whether, with direct hints on, our announcement an for
// k, sent LostWindow or more ago, has not been answered: no Held hint
// came (held.go), so it may have been lost, and is sent again (at most
// once per LostWindow).
func (a *announcer) unheard(k ClaimID, an announcement) bool {
	return a.direct() && a.env.Mono()-an.last >= LostWindow && !a.trusted(k)
}

// withdrawn reports whether k, a claim of ours that just ended, was a
// waiter that announced it waits and did not come to hold (holding): it
// was withdrawn, and its end tells the other processes that its wait
// ended too (their followers count the waits of others: dsync/mongo's
// feed_waits.go). The announcement is forgotten, so that another waiter
// of ours for the same claim announces itself.
func (a *announcer) withdrawn(k ClaimID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	waited, ok := a.announcedBy[k]
	if !ok {
		return false
	}
	delete(a.announcedBy, k)
	delete(a.announced, waited)
	return true
}

// holding records that k, a claim of ours, holds: its end will be a
// release, which tells nobody of a wait of its (the claim it waited for
// ended).
func (a *announcer) holding(k ClaimID) {
	a.mu.Lock()
	delete(a.announcedBy, k)
	a.mu.Unlock()
}

// forget forgets our announcements: the stream went down, and they are
// made again once it is back.
func (a *announcer) forget() {
	a.mu.Lock()
	clear(a.announced)
	a.mu.Unlock()
}
