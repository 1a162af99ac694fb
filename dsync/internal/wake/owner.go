package wake

import (
	"sync"
	"time"
)

// The owner side: the claims this process made, and the announcements of
// other processes that wait for claims. Only the owner of a claim acts
// on an announcement for it: after ending the claim, it publishes the end
// if someone announced, so that an uncontended Lock+Unlock stays at two
// commands; an announcement that comes after the end is answered then.
// Whether the stream showed every announcement made for a claim depends
// on what it was when the claim was made: the stream's generation is
// kept here too.

const (
	// endMemory is how long a process remembers a claim it ended, to
	// answer an announcement that arrives after the end.
	endMemory = 10 * time.Second
	// maxMine bounds the claims of ours remembered (past it, all are
	// forgotten, and their ends announced as if the stream had been down).
	maxMine = 1 << 16
)

// A claimMark is what the feed's state was when a claim of ours was made,
// and the session it was made in.
type claimMark struct {
	gen     uint64        // the stream's generation if live, else 0
	at      time.Duration // local monotonic
	session string
}

// A topWait is the highest claim of a key that another process announced
// it waits for.
type topWait struct {
	epoch uint64
	until time.Time
}

// owner is this process as the owner of claims. Its lock guards its maps
// and the stream's generation; no other lock is taken under it.
type owner struct {
	*shared

	mu sync.Mutex
	// gen counts the times the stream turned live, the last time at
	// liveAt (local monotonic); mine holds, for each claim of ours not yet
	// ended, what the stream was when it was made.
	gen    uint64
	liveAt time.Duration
	mine   map[ClaimID]claimMark
	// unsure: claims of ours that ended while the stream was not live,
	// with when they were made: once it is live, the ends of those made
	// too long before are announced (announcements may have passed by).
	unsure map[ClaimID]time.Duration
	// ends: claims this process ended lately (local monotonic time), so
	// that an announcement that comes after the end is answered.
	ends map[ClaimID]time.Duration
	// remote: claims other processes announced they wait for, until when;
	// remoteTop: for each key, the highest of them.
	remote    map[ClaimID]time.Time
	remoteTop map[string]topWait
}

func newOwner(s *shared) *owner {
	return &owner{
		shared:    s,
		mine:      make(map[ClaimID]claimMark),
		unsure:    make(map[ClaimID]time.Duration),
		ends:      make(map[ClaimID]time.Duration),
		remote:    make(map[ClaimID]time.Time),
		remoteTop: make(map[string]topWait),
	}
}

// claimed records k, a claim of ours made in session, and what the stream
// is as it is made, and forgets an end of k remembered from an earlier
// attempt. It reports whether another process announced it waits
// for k already (before we learnt that k is ours): its Held hints are due.
func (o *owner) claimed(k ClaimID, session string) (waited bool) {
	now := o.env.Now().Earliest
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.mine) >= maxMine {
		clear(o.mine) // their ends are then announced as if blind
	}
	m := claimMark{at: o.env.Mono(), session: session}
	if o.healthy.Load() {
		m.gen = o.gen
	}
	o.mine[k] = m
	// An end of k remembered from before is of an earlier attempt at the
	// same claim (an insert whose outcome was unknown, withdrawn): this
	// claim has not ended, and an announcement for it waits for its end.
	delete(o.ends, k)
	if until, ok := o.remote[k]; ok && until.After(now) {
		// Announced before we learnt that the claim is ours, and kept as
		// another's: keep it as long as the waiter's own announcements
		// hold (at worst, one Ended more than needed).
		o.remote[k] = now.Add(o.holdFor())
		return true
	}
	return false
}

// waiting takes in another process's announcement that it waits for k
// until until. It reports whether this process ended k lately (the caller
// answers it), and whether k is ours.
func (o *owner) waiting(k ClaimID, until, now time.Time) (endedHere, ours bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ours = o.mine[k]
	if !until.After(now) {
		return false, ours
	}
	if at, ok := o.ends[k]; ok && o.env.Mono()-at < endMemory {
		return true, ours
	}
	if len(o.remote) >= maxRemote {
		o.expireLocked(now)
	}
	// Only the owner of the claim acts on an announcement (it publishes
	// the claim's end): others keep it only a while, in case the claim
	// is ours and we have not learnt it yet.
	if !ours {
		until = minTime(until, now.Add(o.othersHold()))
	}
	if until.After(o.remote[k]) {
		o.remote[k] = until
	}
	o.noteTopLocked(k, until, now)
	return false, ours
}

// noteTopLocked records k, announced until until, as the highest waiter
// of its key if it is: the highest waiter of a key hints that
// announcements for lower claims were lost; a hint as old as it was
// before announcements held an hour. o.mu is held.
func (o *owner) noteTopLocked(k ClaimID, until, now time.Time) {
	top := o.remoteTop[k.Key]
	if k.Epoch < top.epoch || k.Epoch == top.epoch && !until.After(top.until) {
		return
	}
	if len(o.remoteTop) >= maxRemote {
		clear(o.remoteTop)
	}
	o.remoteTop[k.Key] = topWait{k.Epoch, minTime(until, now.Add(o.othersHold()))}
}

func (o *owner) expireLocked(now time.Time) {
	for k, until := range o.remote {
		if !until.After(now) {
			delete(o.remote, k)
		}
	}
	if len(o.remote) >= maxRemote {
		clear(o.remote)
	}
}

// waitedFor reports whether another process announced that it waits for
// k, or for a later claim of its key, with the announcement in force: a
// lingering read claim k must let go (linger.go).
func (o *owner) waitedFor(k ClaimID, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if until, ok := o.remote[k]; ok && until.After(now) {
		return true
	}
	top, ok := o.remoteTop[k.Key]
	return ok && top.epoch > k.Epoch && top.until.After(now)
}

// live records that the stream turned live, and returns the claims of
// ours that ended while it was not, too long ago for it to replay the
// announcements made for them: their ends are to be announced.
func (o *owner) live() (blind []ClaimID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gen++
	o.liveAt = o.env.Mono()
	for k, at := range o.unsure {
		if o.liveAt-at >= o.replay() {
			blind = append(blind, k)
		}
	}
	clear(o.unsure)
	return blind
}

// seenAllLocked reports whether the stream has shown every announcement
// made for a claim of ours: it was live since the claim was made, or it
// turned live soon enough after to replay them. o.mu is held.
func (o *owner) seenAllLocked(k ClaimID) bool {
	m, ok := o.mine[k]
	switch {
	case !ok || !o.healthy.Load():
		return false
	case m.gen != 0:
		return m.gen == o.gen
	default:
		return o.liveAt-m.at < o.replay()
	}
}

// ended forgets k, a claim of ours that just ended, remembers its end for
// endMemory (an announcement for it that comes late is answered), and
// reports whether another process may wait for it: it announced it waits
// for it, or for a later claim of its key (its own announcement may have
// been lost on the way), or this process cannot tell (its stream was not
// live all along since the claim was made: announcements may have passed
// unseen).
func (o *owner) ended(k ClaimID) (waited bool) {
	now := o.env.Now().Earliest
	o.mu.Lock()
	defer o.mu.Unlock()
	until, waited := o.remote[k]
	delete(o.remote, k)
	waited = waited && until.After(now)
	if top, ok := o.remoteTop[k.Key]; ok && top.epoch > k.Epoch && top.until.After(now) {
		waited = true
	}
	switch m, ok := o.mine[k]; {
	case o.paused.Load():
		// Hints reach this process, which does not read the store's
		// stream: the announcements that reached it are all it goes by
		// (a process without hints that waits behind it learns of its
		// turn at its own looks, every poll interval: mixed.go).
	case ok && !o.healthy.Load() && !o.off.Load():
		// Too early to tell: the stream, once live, replays the
		// announcements kept (and answers them, see Hub.waiting), and
		// announces this end if some may have passed by then.
		if len(o.unsure) >= maxRemote {
			clear(o.unsure)
		}
		o.unsure[k] = m.at
	case !o.seenAllLocked(k):
		waited = true
	}
	delete(o.mine, k)
	o.rememberEndLocked(k)
	return waited
}

// rememberEndLocked keeps, for endMemory, that this process ended k.
// o.mu is held.
func (o *owner) rememberEndLocked(k ClaimID) {
	mono := o.env.Mono()
	if len(o.ends) >= maxRemote {
		for k, at := range o.ends {
			if mono-at >= endMemory {
				delete(o.ends, k)
			}
		}
		if len(o.ends) >= maxRemote {
			clear(o.ends)
		}
	}
	o.ends[k] = mono
}

// owns reports whether k is a claim of ours that has not ended.
func (o *owner) owns(k ClaimID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.mine[k]
	return ok
}

// session returns the session k, a claim of ours, was made in.
func (o *owner) session(k ClaimID) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.mine[k]
	return m.session, ok
}

// heldDue returns the claims of ours that another process announced it
// waits for, with the announcement in force: their Held hints are due.
func (o *owner) heldDue(now time.Time) []ClaimID {
	o.mu.Lock()
	defer o.mu.Unlock()
	var due []ClaimID
	for k, until := range o.remote {
		if _, ours := o.mine[k]; ours && until.After(now) {
			due = append(due, k)
		}
	}
	return due
}
