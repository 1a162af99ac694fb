package dsyncmongo

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/mongotest"
)

// waitWakeups waits until b follows the event stream.
func waitWakeups(t *testing.T, b *Backend) {
	t.Helper()
	select {
	case <-b.wake.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the event stream did not open within 30s")
	}
	for !b.wake.healthy.Load() {
		time.Sleep(5 * time.Millisecond)
	}
}

// handoff has ps[0] hold key while ps[1] waits in LockContext until it has
// settled into a stretched wait, then unlocks, and returns how long the
// waiter took to get the lock after the Unlock returned. Before unlocking,
// between may act (kill a cursor, ...).
func handoff(t *testing.T, ps []*proc, key string, between func()) time.Duration {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	holder := newMutex(t, ps[0].b, key, dsync.WithTTL(time.Minute))
	waiter := newMutex(t, ps[1].b, key, dsync.WithTTL(time.Minute))
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if ps[0].b.cfg.wakeups {
		waitWakeups(t, ps[0].b)
	}
	got := make(chan time.Time, 1)
	go func() {
		if err := waiter.LockContext(ctx); err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
	}()
	// The waiter announces itself, waits one poll interval (the holder may
	// not have seen the announcement yet), then sleeps until the safety
	// poll interval, unless woken.
	time.Sleep(1500 * time.Millisecond)
	if between != nil {
		between()
	}
	if err := holder.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	unlocked := time.Now()
	at, ok := <-got
	if !ok {
		t.FailNow()
	}
	if err := waiter.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	return at.Sub(unlocked)
}

// TestWakeupHandsOverFast: a waiter in another process gets a released lock
// far sooner than the safety poll interval it sleeps for: by the event.
func TestWakeupHandsOverFast(t *testing.T) {
	const safety = 10 * time.Second
	ps := newProcs(t, 2, WithWakeups(true), WithSafetyPoll(safety))
	for i := range 3 {
		took := handoff(t, ps, "k", nil)
		t.Logf("handoff %d: %v after Unlock (safety poll %v, poll %v)", i, took.Round(time.Millisecond), safety, DefaultPollInterval)
		if took > 2*time.Second {
			t.Errorf("handoff %d took %v: not woken by the release event", i, took)
		}
	}
}

// TestWakeupLossNeverStallsBeyondSafetyPoll: with the waiter's event cursor
// killed, or a holder that sends no events, the waiter still gets the lock
// within the safety poll interval.
func TestWakeupLossNeverStallsBeyondSafetyPoll(t *testing.T) {
	const safety = 2 * time.Second
	const slack = 1500 * time.Millisecond
	t.Run("cursor killed", func(t *testing.T) {
		ps := newProcs(t, 2, WithWakeups(true), WithSafetyPoll(safety))
		took := handoff(t, ps, "k", func() {
			w := ps[1].b.wake
			waitWakeups(t, ps[1].b)
			id := w.cursor.Load()
			ctx := testCtx(t, 10*time.Second)
			err := ps[1].db.RunCommand(ctx, bson.D{
				{Key: "killCursors", Value: ps[1].b.cfg.collection + eventsSuffix},
				{Key: "cursors", Value: bson.A{id}},
			}).Err()
			if err != nil {
				t.Fatalf("killCursors: %v", err)
			}
			for w.healthy.Load() { // the waiter notices, and polls
				time.Sleep(time.Millisecond)
			}
		})
		t.Logf("handoff after the cursor was killed: %v", took.Round(time.Millisecond))
		if took > safety+slack {
			t.Errorf("waiter stalled %v, safety poll %v", took, safety)
		}
		// The stream comes back.
		waitWakeups(t, ps[1].b)
	})
	t.Run("server restarted", func(t *testing.T) {
		srv := mongotest.StartProcess(t)
		name := mongotest.DatabaseName(t)
		ps := make([]*proc, 2)
		for i := range ps {
			c := &counter{}
			client := mongotest.NewClient(t, srv.URI(), c.monitor().SetServerSelectionTimeout(2*time.Second))
			db := client.Database(name)
			ps[i] = &proc{db: db, b: newBackend(t, db, WithWakeups(true), WithSafetyPoll(safety)), cmd: c}
		}
		took := handoff(t, ps, "k", func() {
			waitWakeups(t, ps[1].b)
			srv.Kill()
			for ps[1].b.wake.healthy.Load() {
				time.Sleep(time.Millisecond)
			}
			srv.Restart()
		})
		t.Logf("handoff after a server restart: %v", took.Round(time.Millisecond))
		if took > safety+slack {
			t.Errorf("waiter stalled %v, safety poll %v", took, safety)
		}
	})
	t.Run("holder sends no events", func(t *testing.T) {
		ps := newProcs(t, 2, WithWakeups(true), WithSafetyPoll(safety))
		// The holder's process does not follow events: it never learns of
		// the waiter, and the waiter is never told.
		ps[0].b.cfg.wakeups = false
		took := handoff(t, ps, "k", nil)
		t.Logf("handoff without an event: %v", took.Round(time.Millisecond))
		if took > safety+slack {
			t.Errorf("waiter stalled %v, safety poll %v", took, safety)
		}
	})
}

// TestWakeupsOffPolls: without wake-ups, no events collection is used.
func TestWakeupsOffPolls(t *testing.T) {
	ps := newProcs(t, 2, WithWakeups(false))
	took := handoff(t, ps, "k", nil)
	t.Logf("handoff by polling: %v", took.Round(time.Millisecond))
	if took > DefaultPollInterval*2+time.Second {
		t.Errorf("handoff by polling took %v", took)
	}
	for _, p := range ps {
		if n := p.cmd.take(); n["getMore"] != 0 || n["create"] != 0 {
			t.Errorf("commands %v with wake-ups off", n)
		}
	}
}

// TestCloseStopsTheTailer: Close waits for the goroutine following events.
func TestCloseStopsTheTailer(t *testing.T) {
	p := newProcs(t, 1, WithWakeups(true))[0]
	ctx := testCtx(t, 30*time.Second)
	if _, err := p.b.Acquire(ctx, "k", "o", time.Minute); err != nil {
		t.Fatal(err)
	}
	waitWakeups(t, p.b)
	if err := p.b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.b.wake.done:
	default:
		t.Fatal("Close returned before the tailer stopped")
	}
}
