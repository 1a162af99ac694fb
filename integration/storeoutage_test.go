package integration

import (
	"fmt"
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
// again with a new token, those whose waiter took the key over, and the
// keys not held again within outageTTL + setupBound (the measurement
// stops after an outage that left one, or after which the pairs did not
// form again within setupBound: on two cores at load averages above 20,
// the embedded server then answered no renewal within the 1.2 s a 2 s
// TTL leaves it, for minutes); and it logs the time from the return to
// each key's next hold. Issue 75 asks that every holder keep its hold
// with its token, so that the holds lost are 0; today's figures are in
// docs/operations.md ("Choosing a TTL"). What it asserts holds whatever
// an outage costs: no token goes back, and the history of every key
// shows no two valid holds at once (cluster.check).
//
// Its processes have no outage grace (the default since issue 75):
// TestOutageRiddenThrough is the same outage with one. A measurement, so
// a long test only (CI runs it): 20 keys over 2 + 2
// processes (4 + 4, or forty processes, at a 2 s TTL starved the
// embedded server on two cores more often) and three outages, twenty in
// the soak run:
//
//	DSYNC_LONG=1 go test ./integration -run 'TestStoreOutage$' -v
func TestStoreOutage(t *testing.T) {
	longtest.Skip(t)
	npairs, procs, outages := 20, 2, 3
	if soak() {
		outages = 20
	}
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := pairConfig(outageTTL)
	cfg.Grace = -1 // none: what an outage cost before the grace
	c := newCluster(t, srv.URI(), db, cfg)
	c.hints = false // the store's own signals only
	ps := startPairs(c, npairs, procs)
	var all outageRound
	done := 0
	for range outages {
		before, err := ps.awaitQueued(ps.keys...)
		if err != nil {
			t.Logf("after %d outages, not every key was held with a waiter queued again: %v; the measurement stops there", done, err)
			break
		}
		t0 := history.Now()
		srv.Pause()
		time.Sleep(outageFor)
		srv.Resume()
		t1 := history.Now()
		c.fault("outage", nil, t0, t1)
		r := ps.afterOutage(t, before, t0, t1)
		all.add(r)
		done++
		t.Logf("outage of %v at TTL %v: %s", outageFor, outageTTL, r)
		if r.stuck > 0 {
			t.Logf("the measurement stops: %d keys were not held again within %v of the store's return", r.stuck, outageTTL+setupBound)
			break
		}
	}
	c.check()
	t.Logf("%d outages of %v at TTL %v, %d keys held by %d processes, each with a waiter in one of %d others: %s",
		done, outageFor, outageTTL, npairs, procs, procs, all)
}

// outageRound is what outages cost the holds of the keys.
type outageRound struct {
	kept, relocked, taken int // holders that kept their holds, locked again, were taken over
	stuck                 int // keys not held again within the bound
	back                  []time.Duration
}

func (r *outageRound) add(o outageRound) {
	r.kept, r.relocked, r.taken, r.stuck = r.kept+o.kept, r.relocked+o.relocked, r.taken+o.taken, r.stuck+o.stuck
	r.back = append(r.back, o.back...)
}

func (r outageRound) String() string {
	n := r.kept + r.relocked + r.taken + r.stuck
	return fmt.Sprintf("%d of %d holds lost (%d taken over by their waiters, %d locked again by their holders with a new token), %d kept, %d keys not held again in time; store back → key held again: %s",
		r.relocked+r.taken, n, r.taken, r.relocked, r.kept, r.stuck, fmtQuantiles(r.back))
}

// afterOutage finds, for each key, its first hold after an outage from
// t0 to t1 (a new one, or the hold of before renewed in time with no
// loss signalled: nothing of today's does that), and tells who holds
// it against before, the holds when the outage began. A key not held
// again within outageTTL + setupBound of the return is stuck.
func (ps *pairs) afterOutage(t *testing.T, before map[string]history.Event, t0, t1 int64) outageRound {
	t.Helper()
	var r outageRound
	deadline := time.Now().Add(outageTTL + setupBound)
	for _, key := range ps.keys {
		h := before[key]
		nx, _, ok := ps.c.log.await(0, max(0, time.Until(deadline)), func(e history.Event) bool {
			return e.Ev == history.EvAcquire && e.Key == key && e.T > t0 ||
				e.Ev == history.EvDeadline && e.PID == h.PID && e.Key == key && e.Token == h.Token && e.T > t1 && !ps.ended(h)
		})
		switch {
		case !ok:
			r.stuck++
			continue
		case nx.Token < h.Token:
			t.Errorf("%s: held with token %d after the outage, below %d before it", key, nx.Token, h.Token)
		case nx.PID == h.PID && nx.Token == h.Token:
			r.kept++
		case nx.PID == h.PID:
			r.relocked++
		default:
			r.taken++
		}
		r.back = append(r.back, time.Duration(max(0, nx.T-t1)))
	}
	return r
}
