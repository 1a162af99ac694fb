package leadermongo_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// TestPreemptionDelay measures WithPreemption's promise on the embedded
// server: a candidate of a higher priority than every other live one
// leads once the delay has passed since it queued, and within one
// handoff of the delay's end. Each round starts a candidate of the next
// priority while the others campaign (the leader and the ones waiting
// ahead of it all steer), and times its Campaign from its call to its
// return. The delay is longer than a heartbeat interval, so the ones
// ahead have stepped aside by its end. It asserts only what a busy
// machine cannot break (no sooner than the delay, within a heartbeat
// after it, never two leaders) and logs how far past the delay each
// led, from its call and, by the store's clock, from its claim's
// QueuedAt: the handoff.
func TestPreemptionDelay(t *testing.T) {
	db := mongotest.NewDatabase(t)
	const ttl, delay = 2 * time.Second, 1500 * time.Millisecond // heartbeat: TTL/3
	rounds := 3
	if os.Getenv("DSYNC_LONG") != "" {
		rounds = 12
	}
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		mu      sync.Mutex
		leading int
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	defer cancel()
	storeTime := clienthook.StoreTime.(func(*dsync.Client) time.Time)
	type lead struct {
		at        time.Time // by this process's clock
		fromClaim time.Duration
	}
	start := func(priority int) (elected chan lead) {
		p := newElections(t, db, dsync.WithTTL(ttl))
		e := elect(t, p, "preempt", quiet, leader.WithPriority(priority), leader.WithPreemption(delay), leader.WithPollInterval(20*time.Millisecond))
		elected = make(chan lead, 1)
		wg.Go(func() {
			defer e.Close()
			_ = e.Run(ctx, func(lctx context.Context) error {
				mu.Lock()
				leading++
				if leading > 1 {
					t.Errorf("priority %d leads beside another", priority)
				}
				mu.Unlock()
				l := lead{at: time.Now()}
				storeAt := storeTime(p.c)
				q, err := p.c.Queue(lctx, leader.LockKey("preempt"))
				if i := slices.IndexFunc(q, func(c dsync.ClaimInfo) bool { return c.Owner == e.ID() }); err == nil && i >= 0 {
					l.fromClaim = storeAt.Sub(q[i].QueuedAt)
				}
				elected <- l
				<-lctx.Done()
				mu.Lock()
				leading--
				mu.Unlock()
				return lctx.Err()
			})
		})
		return elected
	}
	first := start(0)
	select {
	case <-first:
	case <-time.After(time.Minute):
		t.Fatal("nobody led within a minute")
	}
	start(0) // a waiting candidate that steps aside each round
	var past, pastClaim []time.Duration
	for r := 1; r <= rounds; r++ {
		begun := time.Now()
		elected := start(r)
		select {
		case l := <-elected:
			took := l.at.Sub(begun)
			if took < delay || took > delay+ttl/3 {
				t.Errorf("round %d: priority %d led %v after it started, want within [%v, %v]", r, r, took, delay, delay+ttl/3)
			}
			past, pastClaim = append(past, took-delay), append(pastClaim, l.fromClaim-delay)
		case <-time.After(time.Minute):
			t.Fatalf("round %d: priority %d did not lead within a minute", r, r)
		}
	}
	slices.Sort(past)
	slices.Sort(pastClaim)
	t.Logf("past the %v delay, over %d rounds, from Campaign: min %v, median %v, max %v", delay, rounds, past[0], past[len(past)/2], past[len(past)-1])
	t.Logf("past the %v delay, over %d rounds, from the claim's QueuedAt (store time): min %v, median %v, max %v", delay, rounds, pastClaim[0], pastClaim[len(pastClaim)/2], pastClaim[len(pastClaim)-1])
}
