package apisim

import (
	"cmp"
	"fmt"
	"slices"
)

// CheckWatch: what a watcher reports of who leads never goes back. Per
// watcher (an incarnation's Leader polls, its Client's Queue polls of a
// key, the status reader's polls, its Observe channel: Observation's
// Source and Key), within what lies between two emptyings of the
// collections (which start the key's tokens again), the token reported
// never decreases ("tokens increase from term to term"; a Client's
// Queue: "once one of a Client's reads found a claim Expired, its later
// reads report it Expired too"), one token is always reported with one
// leader, and Observe sends each new leader, and each newer value of a
// term, once: "tokens strictly increase", and "within a term, Info.Rev
// strictly increases"; and what Leader reports of a term's values never
// goes back either ("observers never see the values of a term go back
// (Info.Rev orders them)", of Proclaim): within one token its Rev never
// decreases, but for a report of Rev 0 and no value, which is what Leader
// reports when the leader's member status could not be read (Info).
// Every report names a claim of its key, with that
// token and that leader, that landed in the store by the time it was
// reported. And a claim a Client's Queue found Expired stays so
// (checkExpiredStays).
//
// But a report may go back to a claim whose session was missing when it
// was read (Observation.Missing): "a session found missing, or expired
// without its first document ..., is not Expired, whatever ExpiresAt
// says" until a claimer ends the claim, and a Client remembers a claim it
// found Expired only "for two of the claim's TTLs past the expiry found":
// once the sessions collection is emptied, a report past that memory
// names a claim whose successor it named before.
func CheckWatch(h *History) []Violation {
	vs := checkExpiredStays(h)
	byWatcher := make(map[watcherKey][]*Observation)
	for _, o := range h.Observations {
		if o.Landed.IsZero() {
			vs = append(vs, Violation{PromiseWatch, fmt.Sprintf("%v: no claim with this token and leader landed", o)})
		}
		byWatcher[o.watcher()] = append(byWatcher[o.watcher()], o)
	}
	for _, os := range byWatcher {
		slices.SortStableFunc(os, func(a, b *Observation) int { return cmp.Compare(a.T.UnixNano(), b.T.UnixNano()) })
		var last *Observation // the newest report of the era
		for _, o := range os {
			if last != nil && h.emptiedBetween(last.Call, o.T) {
				last = nil // another era: its tokens start again
			}
			if last != nil {
				if v, broken := judgeWatch(last, o); broken {
					vs = append(vs, v)
				}
			}
			if last == nil || o.Token > last.Token || o.Token == last.Token && o.Rev > last.Rev {
				last = o
			}
		}
	}
	return vs
}

// judgeWatch judges o against last, the newest report its watcher had
// made before it in its era.
func judgeWatch(last, o *Observation) (Violation, bool) {
	switch {
	case o.Token < last.Token && !o.Missing:
		return Violation{PromiseWatch, fmt.Sprintf("%v after %v: the token went back", o, last)}, true
	case o.Token == last.Token && o.Leader != last.Leader:
		return Violation{PromiseWatch, fmt.Sprintf("%v after %v: one token, two leaders", o, last)}, true
	case o.Source == WatchObserve && o.Token == last.Token && o.Rev <= last.Rev:
		return Violation{PromiseWatch, fmt.Sprintf("%v after %v: Observe sent no newer leader or value", o, last)}, true
	case o.Source == WatchLeader && o.Token == last.Token && o.Rev < last.Rev && (o.Rev != 0 || o.Value != ""):
		return Violation{PromiseWatch, fmt.Sprintf("%v after %v: the leader's value went back", o, last)}, true
	}
	return Violation{}, false
}

// checkExpiredStays: "Once a read of a Client that has claimed ... found
// a claim Expired, its later reads report it Expired too, for two of the
// claim's TTLs past the expiry found ..., even if a renewal its owner
// sent before losing it lands late and raises the session's stored
// expiry". Per watcher and key, a claim a read reported Expired is judged
// in the later reads that returned within two of its TTLs past the
// highest ExpiresAt the reads that reported it Expired reported (the
// session's expiry each found: a read that reports it Expired from the
// Client's memory, with an expiry a late renewal raised, promises as
// much as the first),
// unless the collections were emptied since: whether its session is
// missing then or not (the collection emptied), as the memory is
// consulted first; and so are the leaders that Leader and Observe, which
// read with the same Client, name after such a read.
func checkExpiredStays(h *History) []Violation {
	var vs []Violation
	type watched struct {
		proc, inc int
		key       string
	}
	byWatcher := make(map[watched][]*QueueRead)
	for _, r := range h.QueueReads {
		k := watched{r.Proc, r.Inc, r.Key}
		byWatcher[k] = append(byWatcher[k], r)
	}
	type found struct {
		r *QueueRead
		c ReadClaim
	}
	byToken := make(map[watched]map[uint64]found)
	for k, rs := range byWatcher {
		slices.SortStableFunc(rs, func(a, b *QueueRead) int { return a.T.Compare(b.T) })
		expired := make(map[string]found) // by nonce: the first read that found it Expired
		byToken[k] = make(map[uint64]found)
		for _, r := range rs {
			for _, c := range r.Claims {
				f, ok := expired[c.Nonce]
				switch {
				case !ok:
					if c.Expired && c.TTL > 0 {
						expired[c.Nonce] = found{r, c}
						if _, ok := byToken[k][c.Token]; !ok {
							byToken[k][c.Token] = found{r, c}
						}
					}
				case c.Expired && c.ExpiresAt.After(f.c.ExpiresAt):
					// Reported Expired again, with an expiry a late
					// renewal raised: the promise runs two TTLs past
					// the highest expiry reported.
					f.c.ExpiresAt = c.ExpiresAt
					expired[c.Nonce] = f
					if g, ok := byToken[k][c.Token]; ok && g.r == f.r {
						byToken[k][c.Token] = f
					}
				case !c.Expired && r.T.Before(f.c.ExpiresAt.Add(2*f.c.TTL)) && !h.emptiedBetween(f.r.T, r.T):
					vs = append(vs, Violation{PromiseWatch, fmt.Sprintf("p%d/%d Queue(%s) read claim #%d live at %v, Expired at %v (expiry %v)",
						r.Proc, r.Inc, r.Key, c.Token, r.T.Format(tf), f.r.T.Format(tf), f.c.ExpiresAt.Format(tf))})
				}
			}
		}
	}
	// Leader and Observe read who leads with the Client of the lease
	// key's Queue reads: a leader they name after one of those reads found
	// its claim Expired is a claim read live again.
	for _, o := range h.Observations {
		if o.Source != WatchLeader && o.Source != WatchObserve {
			continue
		}
		f, ok := byToken[watched{o.Proc, o.Inc, o.Key}][o.Token]
		if ok && f.r.T.Before(o.Call) && o.T.Before(f.c.ExpiresAt.Add(2*f.c.TTL)) && !h.emptiedBetween(f.r.T, o.T) {
			vs = append(vs, Violation{PromiseWatch, fmt.Sprintf("%v: its claim was read Expired at %v (expiry %v)", o, f.r.T.Format(tf), f.c.ExpiresAt.Format(tf))})
		}
	}
	return vs
}
