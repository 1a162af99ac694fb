package leader

import (
	"sync"
	"time"
)

// Member liveness across an outage of the store (dsync.ClientWithOutageGrace).
//
// A member counts as live for liveFor after its last status write. In an
// outage of the member store longer than that, nobody can write, and once
// the store is back every member would read every other dead until each
// has written again: whoever read first would assign itself the others'
// shards, and the shards whose owners' views so moved them, kept across
// the outage by their leases, would be let go and taken over, though no
// member died. So the time in which this member could not read the
// members' status, up to the Client's outage grace, counts to nobody's
// age: liveFor grows by it while the failed reads go on, and for liveFor
// after the first read that succeeds, by which time every live member
// has written again. The members then read each other live, assign the
// shards as before the outage, and each owner takes its shards back with
// their tokens (Election.Campaign).
//
// The credit is this member's own view: a member cut off alone takes the
// others for live a little longer once back (its view only), while the
// others judge it as ever, and take its shards over when its leases
// end. Only assignment reads liveness: who may run a shard is its lease's
// to say, so a view that is wrong costs shards moved or kept too long,
// never two owners. The price: a member that died during the outage is
// read live, by members that credit it, for up to liveFor after the
// store's return, which delays the move of its shards by as much. With
// no grace (0), nothing is credited.

// outageCredit is the credit of a member's failed reads of the members.
type outageCredit struct {
	grace time.Duration // the Client's outage grace: the most credited

	mu     sync.Mutex
	since  time.Time     // the first failed read of a run of them; zero: none
	credit time.Duration // the last run's, counted until until
	until  time.Time
}

// failed records a read of the members that failed at now.
func (o *outageCredit) failed(now time.Time) {
	if o.grace == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		o.since = now
	}
}

// read records a read of the members that succeeded at now: the run of
// failed reads, if any, is credited for base (liveFor's own) after now.
func (o *outageCredit) read(now time.Time, base time.Duration) {
	if o.grace == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return
	}
	o.credit, o.until = min(now.Sub(o.since), o.grace), now.Add(base)
	o.since = time.Time{}
}

// at is the credit at now.
func (o *outageCredit) at(now time.Time) time.Duration {
	if o.grace == 0 {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case !o.since.IsZero():
		return min(now.Sub(o.since), o.grace)
	case now.Before(o.until):
		return o.credit
	}
	return 0
}
