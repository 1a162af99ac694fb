package history

import (
	"cmp"
	"slices"
)

// checkObservers checks what observers saw of leaders (EvObserve, EvPoll):
// per process, tokens strictly increase, and so do the revisions of a
// term's values; each observed leader is the owner of the hold with that
// token, and each value the one its leader proclaimed at that revision
// (within an era).
func checkObservers(r *Report, events []Event, era eras) {
	c := observerCheck{
		r:          r,
		byToken:    holdsByToken(r, era),
		proclaimed: proclaimedValues(r, events, era),
		last:       make(map[observer]seen),
	}
	for _, ev := range observations(events) {
		r.Observations++
		if ev.Rev > 0 {
			r.ValuesSeen++
		}
		e := era.of(ev.T)
		c.checkOrder(ev, e)
		c.checkValue(ev, e)
		c.checkOwner(ev, e)
	}
}

// observerCheck is what checkObservers keeps while it goes through the
// observations in time order.
type observerCheck struct {
	r          *Report
	byToken    map[string]map[eraToken]*Hold
	proclaimed map[termRev]string
	// last is the newest leader and value each observer saw.
	last map[observer]seen
}

// eraToken names a term of a key: its token, within an era.
type eraToken struct {
	era   int
	token uint64
}

// termRev names a value of a term: the term's key and token and the
// value's revision, within an era.
type termRev struct {
	era        int
	key        string
	token, rev uint64
}

// observer is one process's stream of observations of a key, by one means
// (EvObserve or EvPoll).
type observer struct {
	pid      int
	key, how string
}

// seen is the newest leader and value an observer saw.
type seen struct {
	era   int
	token uint64
	rev   uint64
	adv   string
}

// precedes reports whether s came before o: an earlier era, or in the
// same era a lower token, or a lower revision of the same token.
func (s seen) precedes(o seen) bool {
	return s.era != o.era || o.token > s.token || o.token == s.token && o.rev > s.rev
}

// holdsByToken indexes the holds of each key by era and token.
func holdsByToken(r *Report, era eras) map[string]map[eraToken]*Hold {
	byToken := make(map[string]map[eraToken]*Hold)
	for key, hs := range r.Holds {
		m := make(map[eraToken]*Hold, len(hs))
		for _, h := range hs {
			m[eraToken{era.of(h.Acquired), h.Token}] = h
		}
		byToken[key] = m
	}
	return byToken
}

// proclaimedValues returns what each term's leader proclaimed, by
// revision, and counts the proclamations in r.
func proclaimedValues(r *Report, events []Event, era eras) map[termRev]string {
	proclaimed := make(map[termRev]string)
	for i := range events {
		if ev := &events[i]; ev.Ev == EvProclaim {
			proclaimed[termRev{era.of(ev.T), ev.Key, ev.Token, ev.Rev}] = ev.Adv
			r.Proclaims++
		}
	}
	return proclaimed
}

// observations returns the observe and poll events in time order.
func observations(events []Event) []*Event {
	var observed []*Event
	for i := range events {
		if ev := &events[i]; ev.Ev == EvObserve || ev.Ev == EvPoll {
			observed = append(observed, ev)
		}
	}
	slices.SortStableFunc(observed, func(a, b *Event) int { return cmp.Compare(a.T, b.T) })
	return observed
}

// checkOrder checks ev, in era e, against what its observer saw before.
// Observe reports each new leader, and each newer value of its term,
// once: (token, revision) strictly increase. Polls may see the same value
// again: never decreasing, except to the status Leader reports when it
// cannot read the leader's member status (Value "" and Rev 0: Close
// deletes the status once the term's lock is given up, and a release that
// was not confirmed leaves the lock looking live until its session
// expires).
func (c *observerCheck) checkOrder(ev *Event, e int) {
	id := observer{ev.PID, ev.Key, ev.Ev}
	cur := seen{era: e, token: ev.Token, rev: ev.Rev, adv: ev.Adv}
	prev, ok := c.last[id]
	if ok && prev.era == e {
		c.compare(ev, prev)
	}
	if !ok || prev.precedes(cur) {
		c.last[id] = cur
	}
}

// compare reports ev if it went back from prev, seen before in its era,
// or (Observe) repeated it, or gave its revision another value.
func (c *observerCheck) compare(ev *Event, prev seen) {
	unread := ev.Ev == EvPoll && ev.Rev == 0 && ev.Adv == ""
	back := ev.Token < prev.token || ev.Token == prev.token && ev.Rev < prev.rev && !unread
	again := ev.Token == prev.token && ev.Rev == prev.rev
	switch {
	case back:
		c.r.add(KindObserve, ev.Key, "%s(pid %d) %s token %d revision %d at %s after token %d revision %d",
			ev.Worker, ev.PID, ev.Ev, ev.Token, ev.Rev, ts(ev.T), prev.token, prev.rev)
	case again && ev.Ev == EvObserve:
		c.r.add(KindObserve, ev.Key, "%s(pid %d) observe reported token %d revision %d again at %s",
			ev.Worker, ev.PID, ev.Token, ev.Rev, ts(ev.T))
	case again && ev.Adv != prev.adv:
		c.r.add(KindObserve, ev.Key, "%s(pid %d) %s token %d revision %d with value %q at %s, %q before",
			ev.Worker, ev.PID, ev.Ev, ev.Token, ev.Rev, ev.Adv, ts(ev.T), prev.adv)
	}
}

// checkValue checks that an observed value is the one its leader
// proclaimed at that revision.
func (c *observerCheck) checkValue(ev *Event, e int) {
	if adv, ok := c.proclaimed[termRev{e, ev.Key, ev.Token, ev.Rev}]; ok && ev.Rev > 0 && adv != ev.Adv {
		c.r.add(KindObserve, ev.Key, "%s(pid %d) %s token %d revision %d with value %q, proclaimed as %q",
			ev.Worker, ev.PID, ev.Ev, ev.Token, ev.Rev, ev.Adv, adv)
	}
}

// checkOwner checks that an observed leader is the owner of the hold with
// its token.
func (c *observerCheck) checkOwner(ev *Event, e int) {
	if h := c.byToken[ev.Key][eraToken{e, ev.Token}]; h != nil && h.Owner != "" && ev.Owner != "" && h.Owner != ev.Owner {
		c.r.add(KindObserve, ev.Key, "%s(pid %d) observed token %d owned by %s, but %v has owner %s",
			ev.Worker, ev.PID, ev.Token, ev.Owner, h, h.Owner)
	}
}
