package dsyncgocron_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// Three schedulers elect: the leader's runs the job at each tick, the
// others skip it; when the leader stops, another takes over.
func TestElectorRunsJobsOnTheLeaderOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		members := leadertest.NewMemoryMembers()
		var electors []*dsyncgocron.Elector
		for range 3 {
			e, err := leader.NewElection(newClient(t, store.Process()), "cron", leader.WithMembers(members), leader.WithLogger(quietLog))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			el, err := dsyncgocron.NewElector(e)
			if err != nil {
				t.Fatal(err)
			}
			electors = append(electors, el)
		}
		r := &runs{}
		var scheds []gocron.Scheduler
		start := time.Now().Truncate(time.Second).Add(2 * time.Second)
		for i, el := range electors {
			s, err := gocron.NewScheduler(gocron.WithDistributedElector(el))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() { r.add(i) }),
				gocron.WithStartAt(gocron.WithStartDateTime(start.Add(skews[i]))))
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			scheds = append(scheds, s)
		}
		defer func() {
			for _, s := range scheds {
				_ = s.Shutdown()
			}
		}()
		time.Sleep(time.Until(start.Add(9500 * time.Millisecond)))
		r.mu.Lock()
		if r.all != 10 {
			t.Fatalf("%d runs in 10 s (by scheduler %v), want 10", r.all, r.by)
		}
		first := r.by[0]
		for _, who := range r.by {
			if who != first {
				t.Fatalf("runs by schedulers %v: only the leader's should run", r.by)
			}
		}
		r.mu.Unlock()
		leaders := 0
		for _, el := range electors {
			if el.IsLeader(context.Background()) == nil {
				leaders++
			} else if err := el.IsLeader(context.Background()); !errors.Is(err, leader.ErrNotLeader) {
				t.Errorf("IsLeader of a follower: %v, want ErrNotLeader", err)
			}
		}
		if leaders != 1 || electors[first].IsLeader(context.Background()) != nil {
			t.Fatalf("%d leaders; the one that ran leads: %v", leaders, electors[first].IsLeader(context.Background()))
		}

		// The leader stops: it resigns, and another leads the next ticks.
		if err := electors[first].Close(); err != nil {
			t.Fatal(err)
		}
		if err := electors[first].IsLeader(context.Background()); err == nil {
			t.Fatal("a closed Elector still leads")
		}
		time.Sleep(5 * time.Second)
		r.mu.Lock()
		defer r.mu.Unlock()
		after := r.by[10:]
		if len(after) < 4 || len(after) > 5 {
			t.Fatalf("%d runs in the 5 s after the leader stopped (by %v), want 4 or 5", len(after), after)
		}
		for _, who := range after {
			if who == first || who != after[0] {
				t.Fatalf("runs after the leader stopped by %v (it was %d): want one new leader's", after, first)
			}
		}
		for i, el := range electors {
			if i != first {
				_ = el.Close()
			}
		}
	})
}

func TestNewElectorRejectsNil(t *testing.T) {
	if _, err := dsyncgocron.NewElector(nil); err == nil {
		t.Fatal("nil election accepted")
	}
}
