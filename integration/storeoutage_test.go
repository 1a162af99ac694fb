package integration

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// outageTTL and outageFor are issue 75's scene: a store outage of six
// TTLs, the length of a MongoDB election and then some.
const (
	outageTTL = 2 * time.Second
	outageFor = 12 * time.Second
)

// The store stops answering everyone at once (its process SIGSTOPped,
// mongotest.Process.Pause) for outageFor, while every key is held, with
// its waiter queued in another process, and then comes back with its
// data. Nobody could renew anything meanwhile, holder or waiter.
//
// This measures what such an outage costs the holders; it does not
// judge it. For each key it takes the first hold after the store's
// return (a renewal of the hold of before, confirmed with no loss
// signalled, counts as one), and counts the holders that kept their
// holds (the same process and token, nobody between), those that locked
// again with a new token, and those whose waiter took the key over; and
// it logs the time from the return to the key's next hold. Issue 75 asks that every
// holder keep its hold with its token, so that the takeovers logged are
// 0: the figures are in docs/operations.md ("Choosing a TTL"). What it
// asserts holds whatever an outage costs: every key is held again after
// the return (no key stays stuck), no token goes back, and the history
// of every key shows no two valid holds at once (cluster.check).
//
// Four keys, held by 2 processes, each key with a waiter in one of 2
// others, and one outage; with DSYNC_LONG=1 20 keys over 4 + 4 processes
// (forty processes at a 2 s TTL starve the embedded server on two
// cores) and three outages, twenty in the soak run:
//
//	DSYNC_LONG=1 go test ./integration -run 'TestStoreOutage$' -v
func TestStoreOutage(t *testing.T) {
	npairs, procs, outages := 4, 2, 1
	switch {
	case soak():
		npairs, procs, outages = 20, 4, 20
	case longtest.Enabled():
		npairs, procs, outages = 20, 4, 3
	}
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	c := newCluster(t, srv.URI(), db, pairConfig(outageTTL))
	c.hints = false // the store's own signals only
	ps := startPairs(c, npairs, procs)
	var kept, relocked, taken int
	var back []time.Duration
	for range outages {
		before := ps.queued(ps.keys...)
		t0 := history.Now()
		srv.Pause()
		time.Sleep(outageFor)
		srv.Resume()
		t1 := history.Now()
		c.fault("outage", nil, t0, t1)
		var k, r, w int
		var round []time.Duration
		for _, key := range ps.keys {
			h := before[key]
			// After the return, the key's first hold: a new one, or the
			// hold of before renewed in time, never lost (nothing of today's
			// does that). No lock stays stuck.
			nx, _ := c.await(0, outageTTL+setupBound, "a hold of "+key+" after the outage", func(e history.Event) bool {
				return e.Ev == history.EvAcquire && e.Key == key && e.T > t0 ||
					e.Ev == history.EvDeadline && e.PID == h.PID && e.Key == key && e.Token == h.Token && e.T > t1 && !ps.ended(h)
			})
			switch {
			case nx.Token < h.Token:
				t.Errorf("%s: held with token %d after the outage, below %d before it", key, nx.Token, h.Token)
			case nx.PID == h.PID && nx.Token == h.Token:
				k++
			case nx.PID == h.PID:
				r++
			default:
				w++
			}
			round = append(round, time.Duration(max(0, nx.T-t1)))
		}
		kept, relocked, taken = kept+k, relocked+r, taken+w
		back = append(back, round...)
		t.Logf("outage of %v at TTL %v: %d of %d holders lost their holds (%d taken over by their waiters, %d locked again with a new token), %d kept them; store back → key held again: %s",
			outageFor, outageTTL, r+w, npairs, w, r, k, fmtQuantiles(round))
	}
	c.check()
	t.Logf("%d outages of %v at TTL %v, %d keys held by %d processes, each with a waiter in one of %d others: %d of %d holds lost (%d taken over by their waiters, %d locked again by their holders with a new token), %d kept; store back → key held again: %s",
		outages, outageFor, outageTTL, npairs, procs, procs, relocked+taken, outages*npairs, taken, relocked, kept, fmtQuantiles(back))
}
