package dsync

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The announcer: a waiter tells the other processes which claim it waits
// for; the owner of a claim, when it ends it, tells them it ended if one
// of them may wait for it (an uncontended Lock+Unlock sends no event).

// announce tells the other processes that this one waits for k, with its
// own claim of k's key of the epoch own (0: none to tell), and how many
// ends it needs (driver.Event.Need), unless an announcement of ours still
// holds for more than a safety poll interval (it holds holdFor: once per
// claim waited for, in practice); but a need that dropped to 1 from
// more is told again at once, by direct hints only (retell). It returns
// the age of the announcement in force.
func (w *wakeups) announce(ctx context.Context, k waitKey, own, need uint64) (time.Duration, error) {
	now := w.env.now()
	safety := w.env.safetyPoll
	w.mu.Lock()
	a, ok := w.announced[k]
	w.mu.Unlock()
	healthy := w.healthy.Load()
	if ok && a.direct && healthy {
		ok = false // the store's stream never carried it
	}
	if ok && a.until.Sub(now.Latest) > safety && !w.unheard(k, a) {
		if a.need > 1 && need == 1 {
			w.retell(k, a, own)
		}
		return w.env.mono() - a.sent, nil
	}
	sent, again := w.env.mono(), ok && a.until.After(now.Earliest)
	if again {
		// Announcing again while the last announcement holds: the owner
		// has heard of us since then (or lost the event, as it may lose
		// this one), so the looks that follow a first announcement are
		// not needed again. Its age runs from the first.
		sent = a.sent
		// Another waiter of ours for k may need fewer ends: the least
		// need told stands.
		need = min(need, a.need)
	}
	until := now.Earliest.Add(w.holdFor())
	e := driver.Event{Kind: driver.Waiting, Key: k.key, Epoch: k.epoch, Until: until, Own: own, Need: need, Proc: w.proc}
	if err := w.feed.Publish(ctx, e); err != nil {
		w.env.logger.Debug("dsync: announcing a waiter failed", slog.Any("err", err))
		return 0, err
	}
	w.mu.Lock()
	if len(w.announced) >= maxRemote {
		clear(w.announced)
	}
	w.announced[k] = announcement{until: until, sent: sent, last: w.env.mono(), direct: !healthy, need: need}
	if own != 0 {
		if len(w.announcedBy) >= maxRemote {
			clear(w.announcedBy) // their withdrawals go unsaid
		}
		w.announcedBy[waitKey{k.key, own}] = k
	}
	w.mu.Unlock()
	if again {
		return w.env.mono() - sent, nil
	}
	return 0, nil
}

// A teller is a feed that can send an event by direct hints only
// (hint.Feed.Tell).
type teller interface {
	Tell(e driver.Event) bool
}

// needOne tells the owner of k, if our announcement a for it holds and
// told a need of more than one end, that this process needs only k's
// end now (retell): a waiter of ours heard of an end that leaves it one
// short. Nothing else: the next walk's wait announces what is due.
func (w *wakeups) needOne(k waitKey, own uint64) {
	w.mu.Lock()
	a, ok := w.announced[k]
	w.mu.Unlock()
	if ok && a.need > 1 && a.until.After(w.env.now().Latest) {
		w.retell(k, a, own)
	}
}

// retell tells the owner of k again that this process waits for it, a,
// with a need of 1 now: a waiter that only counted k's end (it needed
// more ends) may hold on it now, so the owner is to send it at once,
// not later (dsync/hint's endDefer). By direct hints only
// (hint.Feed.Tell): the store's feed carries no need, and is sent
// nothing more. If no hint could be sent, the need told stays as it
// was, and the waiter's next announce tries again; a retelling lost
// costs at most the owner's delay.
func (w *wakeups) retell(k waitKey, a announcement, own uint64) {
	t, ok := w.feed.(teller)
	if !ok {
		return
	}
	e := driver.Event{Kind: driver.Waiting, Key: k.key, Epoch: k.epoch, Until: a.until, Own: own, Need: 1, Proc: w.proc}
	if !t.Tell(e) {
		return
	}
	w.mu.Lock()
	if cur, ok := w.announced[k]; ok && cur.until.Equal(a.until) {
		cur.need, cur.last = 1, w.env.mono()
		w.announced[k] = cur
	}
	w.mu.Unlock()
}

// unheard reports whether, with direct hints on, our announcement a for
// k, sent lostWindow or more ago, has not been answered: no Held hint
// came (wake_held.go), so it may have been lost, and is sent again (at
// most once per lostWindow).
func (w *wakeups) unheard(k waitKey, a announcement) bool {
	return w.env.direct && w.env.mono()-a.last >= lostWindow && !w.trusted(k)
}

// claimed records a claim of ours, the session it was made in (whose
// expiry our Held hints for it carry), and whether the stream is live as
// it is made: an announcement for it can only come after it exists. It also
// wakes whoever waits for the key's claims to appear (relock.go).
func (w *wakeups) claimed(key string, epoch uint64, session string) {
	var now time.Time
	if w.feed != nil {
		now = w.env.now().Earliest
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claimSeenLocked(key, epoch)
	if w.feed == nil {
		return
	}
	k := waitKey{key, epoch}
	if len(w.mine) >= maxMine {
		clear(w.mine) // their ends are then announced as if blind
	}
	m := claimMark{at: w.env.mono(), session: session}
	if w.healthy.Load() {
		m.gen = w.gen
	}
	w.mine[k] = m
	if until, ok := w.remote[k]; ok {
		// Announced before we learnt that the claim is ours, and kept as
		// another's: keep it as long as the waiter's own announcements
		// hold (at worst, one Ended more than needed).
		if until.After(now) {
			w.remote[k] = now.Add(w.holdFor())
			notify(w.beatKick) // its waiter hears from us (wake_held.go)
		}
	}
}

// seenAll reports whether the stream has shown every announcement made
// for a claim of ours: it was live since the claim was made, or it turned
// live soon enough after to replay them. w.mu must be held.
func (w *wakeups) seenAll(k waitKey) bool {
	m, ok := w.mine[k]
	switch {
	case !ok || !w.healthy.Load():
		return false
	case m.gen != 0:
		return m.gen == w.gen
	default:
		return w.liveAt-m.at < w.feed.Replay()
	}
}

// ended wakes the waiters for key's epoch: those of this process directly,
// and others through an Ended event if one of them may wait for it:
// another process announced it waits for it, or for a later claim of the
// key (its own announcement may have been lost on the way), or our stream
// was not live all along since the claim was made (announcements may have
// passed unseen). Best effort: a waiter that misses it looks again later.
func (w *wakeups) ended(ctx context.Context, key string, epoch uint64) {
	k := waitKey{key, epoch}
	now := w.env.now().Earliest
	w.mu.Lock()
	for c := range w.local[k] {
		notify(c)
	}
	w.noteEndLocked(k)
	w.unwatchLingerLocked(k)
	if w.feed == nil {
		w.mu.Unlock()
		return
	}
	waited := w.waitedForLocked(k, now)
	if w.withdrawnLocked(k) {
		waited = true
	}
	w.rememberEndLocked(k)
	w.mu.Unlock()
	if waited && !w.off.Load() {
		w.sendEnded(ctx, k)
	}
}

// withdrawnLocked reports whether k, a claim of ours that just ended, was
// a waiter that announced it waits and did not come to hold (holding): it
// was withdrawn, and its end tells the other processes that its wait
// ended too (their followers count the waits of others: dsync/mongo's
// feed_waits.go). The announcement is forgotten, so that another waiter
// of ours for the same claim announces itself. w.mu is held.
func (w *wakeups) withdrawnLocked(k waitKey) bool {
	waited, ok := w.announcedBy[k]
	if !ok {
		return false
	}
	delete(w.announcedBy, k)
	delete(w.announced, waited)
	return true
}

// holding records that k, a claim of ours, holds: its end will be a
// release, which tells nobody of a wait of its (the claim it waited for
// ended).
func (w *wakeups) holding(k waitKey) {
	w.mu.Lock()
	delete(w.announcedBy, k)
	w.mu.Unlock()
}

// waitedForLocked reports whether another process may wait for k, whose
// claim this process just ended: it announced it waits for it, or for a
// later claim of its key, or this process cannot tell (its stream was not
// live all along since the claim was made). w.mu is held.
func (w *wakeups) waitedForLocked(k waitKey, now time.Time) bool {
	until, waited := w.remote[k]
	delete(w.remote, k)
	waited = waited && until.After(now)
	if top, ok := w.remoteTop[k.key]; ok && top.epoch > k.epoch && top.until.After(now) {
		waited = true
	}
	switch m, ok := w.mine[k]; {
	case w.paused.Load():
		// Hints reach this process, which does not read the store's
		// stream: the announcements that reached it are all it goes by
		// (a process without hints that waits behind it learns of its
		// turn at its own looks, every poll interval: wake_mixed.go).
	case ok && !w.healthy.Load() && !w.off.Load():
		// Too early to tell: the stream, once live, replays the
		// announcements kept (and answers them, see Event), and announces
		// this end if some may have passed by then.
		if len(w.unsure) >= maxRemote {
			clear(w.unsure)
		}
		w.unsure[k] = m.at
	case !w.seenAll(k):
		waited = true
	}
	delete(w.mine, k)
	return waited
}

// rememberEndLocked keeps, for endMemory, that this process ended k, so
// that an announcement of a waiter for it that comes late is answered
// (Event). w.mu is held.
func (w *wakeups) rememberEndLocked(k waitKey) {
	mono := w.env.mono()
	if len(w.ends) >= maxRemote {
		for k, at := range w.ends {
			if mono-at >= endMemory {
				delete(w.ends, k)
			}
		}
		if len(w.ends) >= maxRemote {
			clear(w.ends)
		}
	}
	w.ends[k] = mono
}

// sendEnded publishes an Ended event for k.
func (w *wakeups) sendEnded(ctx context.Context, k waitKey) {
	e := driver.Event{Kind: driver.Ended, Key: k.key, Epoch: k.epoch, Proc: w.proc}
	if err := w.feed.Publish(ctx, e); err != nil {
		w.env.logger.Debug("dsync: announcing an end failed", slog.String("key", k.key), slog.Any("err", err))
	}
}
