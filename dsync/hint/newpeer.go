package hint

import (
	"time"
)

// A process that this one learns of (its hello, or any hint from it, or
// its record read) is sent at once this process's recent announcements
// that no owner answered. A waiter announces once per claim, to the
// processes it knows then; the owner of the claim may start taking hints
// just after (a process that held uncontended settles its hints in the
// background, a second after its session opened: dsync/hints.go), and
// would hear of the waiter only when the waiter's announcement, unanswered
// for wake.LostWindow, is made again, or not before the release: the
// waiter would learn of the release at its poll (bench/handoff-tails.md).
// An announcement older than resendWithin is not sent: a waiter whose
// announcement stands unanswered that long makes it again itself, to
// every process it knows by then. Only a hint is sent sooner, so a late,
// lost or repeated one changes nothing but a waiter's wake.

const resendWithin = time.Second

// A recentWaiting is an announcement this process sent (or had no process
// to send to), and when (local monotonic).
type recentWaiting struct {
	m  msg
	at time.Duration
}

// noteWaitingLocked keeps m, an announcement being sent, for a process
// learnt of within f.resendWithin. f.mu is held.
func (f *Feed) noteWaitingLocked(m msg) {
	now := f.mono()
	if len(f.recent) >= maxInterest {
		for k, r := range f.recent {
			if now-r.at >= f.resendWithin {
				delete(f.recent, k)
			}
		}
		if len(f.recent) >= maxInterest {
			clear(f.recent)
		}
	}
	f.recent[claimID{m.key, m.epoch}] = recentWaiting{m: m, at: now}
}

// toldNeedOneLocked records that the announcement for k now tells a need
// of 1 (Tell), so that it is sent again as told. f.mu is held.
func (f *Feed) toldNeedOneLocked(k claimID) {
	if r, ok := f.recent[k]; ok {
		r.m.need = 1
		f.recent[k] = r
	}
}

// unansweredLocked returns the announcements sent within f.resendWithin
// whose claim's owner has not answered (no Held hint came from it).
// f.mu is held.
func (f *Feed) unansweredLocked(now time.Time) []msg {
	mono := f.mono()
	var ms []msg
	for k, r := range f.recent {
		if mono-r.at >= f.resendWithin {
			delete(f.recent, k)
			continue
		}
		if o, ok := f.owners[k]; ok && o.until.After(now) {
			continue
		}
		ms = append(ms, r.m)
	}
	return ms
}

// knowsLocked reports whether this process has a record of the process
// id in force at now (store time). f.mu is held.
func (f *Feed) knowsLocked(id string, now time.Time) bool {
	p, ok := f.peersByID[id]
	return ok && p.expires.After(now)
}

// greet sends to, processes this one just learnt of, the announcements
// no owner answered yet.
func (f *Feed) greet(to []dest) {
	if len(to) == 0 {
		return
	}
	f.mu.Lock()
	ms := f.unansweredLocked(f.store.ServerTime().Earliest)
	f.mu.Unlock()
	for _, m := range ms {
		f.sendTo(m, to)
	}
}
