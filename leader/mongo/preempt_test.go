package leadermongo_test

import (
	"context"
	"fmt"
	"github.com/go-dsync/dsync/leader/operator"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// TestPreemptionDelay measures WithPreemption's promise on the embedded
// server: a candidate of a higher priority than every other live one
// leads once the delay has passed since it queued, and within one
// handoff of the delay's end. Each round starts a candidate of the next
// priority while the others campaign (the leader and the ones waiting
// ahead of it all steer), and times its Campaign from its call to its
// return. The delay is longer than a heartbeat interval, so the ones
// ahead have stepped aside by its end. Then, as many times, the best
// resigns: the next leads (a graceful handoff, timed from Resign, the
// baseline), and the best, which campaigns again, preempts it back. It
// asserts only what a busy machine cannot break (no sooner than the
// delay, within a few TTLs after it, never two leaders) and logs how
// far past the delay each preemption led, by the store's clock from its
// claim's QueuedAt, beside the graceful handoffs.
func TestPreemptionDelay(t *testing.T) {
	t.Parallel()
	db := mongotest.NewDatabase(t)
	// The TTL is long enough that a busy machine's late renewals do not
	// end a term the test counts on; heartbeat: TTL/3.
	const ttl, delay = 6 * time.Second, 3 * time.Second
	rounds := 2 // the short form; 12 in the long form (DSYNC_LONG=1, as CI runs it)
	if longtest.Enabled() {
		rounds = 12
	}
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type lead struct {
		who       int       // its priority
		at        time.Time // by this process's clock
		fromClaim time.Duration
	}
	var (
		mu      sync.Mutex
		leading int
		wg      sync.WaitGroup
		leads   = make(chan lead, 64)
		es      []*leader.Election
		ps      []*lproc
	)
	defer wg.Wait()
	defer cancel()
	storeTime := clienthook.StoreTime.(func(*dsync.Client) time.Time)
	start := func(priority int) {
		p := newElections(t, db, dsync.ClientWithTTL(ttl))
		e := elect(t, p, "preempt", quiet, leader.WithPriority(priority), leader.WithPreemption(delay), leader.WithPollInterval(20*time.Millisecond))
		es, ps = append(es, e), append(ps, p)
		wg.Go(func() {
			defer e.Close()
			_ = e.Run(ctx, func(lctx context.Context) error {
				mu.Lock()
				leading++
				if leading > 1 {
					t.Errorf("priority %d leads beside another", priority)
				}
				mu.Unlock()
				l := lead{who: priority, at: time.Now()}
				storeAt := storeTime(p.c)
				q, err := statuspage.NewReader(p.c).Queue(lctx, operator.LockKey("preempt"))
				if i := slices.IndexFunc(q, func(c statuspage.ClaimInfo) bool { return c.Owner == e.ID() }); err == nil && i >= 0 {
					l.fromClaim = storeAt.Sub(q[i].QueuedAt)
				}
				leads <- l
				<-lctx.Done()
				mu.Lock()
				leading--
				mu.Unlock()
				return lctx.Err()
			})
		})
	}
	await := func(what string) lead {
		select {
		case l := <-leads:
			return l
		case <-time.After(time.Minute):
			t.Fatalf("%s: nobody led within a minute", what)
			return lead{}
		}
	}
	start(0)
	await("first")
	first := es[0]
	start(0) // a waiting candidate that steps aside each round
	var past, graceful []time.Duration
	preempted := func(l lead, begun time.Time, want int) {
		took := l.at.Sub(begun)
		switch {
		case l.who != want:
			t.Errorf("priority %d led, want %d", l.who, want)
		case took < delay || took > delay+3*ttl:
			t.Errorf("priority %d led %v after it started, want within [%v, %v]", l.who, took, delay, delay+3*ttl)
		}
		past = append(past, l.fromClaim-delay)
	}
	byPriority := map[int]*leader.Election{0: first}
	for r := 1; r <= rounds; r++ {
		begun := time.Now()
		start(r)
		byPriority[r] = es[len(es)-1]
		preempted(await(fmt.Sprintf("round %d", r)), begun, r)
		// Three candidates at most (the leader, the one it preempted, and
		// the waiting one): the rounds measure the delay, not a store
		// loaded by more candidates each round.
		if old, ok := byPriority[r-2]; ok {
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			delete(byPriority, r-2)
		}
	}
	best, second := es[len(es)-1], es[len(es)-2]
	// sorted waits until second's claim is next after best's: the
	// candidates queued ahead of it step aside at their heartbeats.
	sorted := func() {
		for range 6000 {
			q, err := statuspage.NewReader(ps[0].c).Queue(ctx, operator.LockKey("preempt"))
			live := slices.DeleteFunc(q, func(c statuspage.ClaimInfo) bool { return c.Expired })
			if err == nil && len(live) > 1 && live[0].Owner == best.ID() && live[1].Owner == second.ID() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("the queue was not in rank order within a minute")
	}
	for r := range rounds {
		sorted()
		begun := time.Now()
		if err := best.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if l := await(fmt.Sprintf("resign %d", r)); l.who != rounds-1 {
			t.Errorf("priority %d led after the best resigned, want %d", l.who, rounds-1)
		} else {
			graceful = append(graceful, l.at.Sub(begun))
		}
		// The best campaigns again (Run), and preempts back.
		preempted(await(fmt.Sprintf("preempt back %d", r)), begun, rounds)
	}
	figures := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "none"
		}
		slices.Sort(ds)
		return fmt.Sprintf("min %v, median %v, max %v", ds[0], ds[len(ds)/2], ds[len(ds)-1])
	}
	t.Logf("%d preemptions past the %v delay, from the claim's QueuedAt (store time): %s", len(past), delay, figures(past))
	t.Logf("%d graceful handoffs, Resign to Campaign: %s", len(graceful), figures(graceful))
}
