package dsyncmongo

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

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

// lockInBackground starts m.LockContext(ctx) in a goroutine. The channel
// receives when it got the lock, or is closed if it failed (reported).
func lockInBackground(t *testing.T, ctx context.Context, m *dsync.Mutex) <-chan time.Time {
	got := make(chan time.Time, 1)
	go func() {
		if err := m.LockContext(ctx); err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
	}()
	return got
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
	got := lockInBackground(t, ctx, waiter)
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

// lockCommands counts, per process, the commands sent to the lock
// collection (not to the events collection), by command name.
func lockCommands(ps []*proc) func() []map[string]int {
	counts := make([]map[string]int, len(ps))
	var mu sync.Mutex
	for i, p := range ps {
		counts[i] = map[string]int{}
		coll := p.b.cfg.collection
		p.cmd.mu.Lock()
		p.cmd.onStart = func(e *event.CommandStartedEvent) {
			if v, err := e.Command.Index(0).Value().StringValueOK(); err && v == coll {
				mu.Lock()
				counts[i][e.CommandName]++
				mu.Unlock()
			}
		}
		p.cmd.mu.Unlock()
	}
	return func() []map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make([]map[string]int, len(counts))
		for i, c := range counts {
			out[i] = c
			counts[i] = map[string]int{}
		}
		return out
	}
}

// queued waits until p's process knows of n other processes waiting for
// key.
func queued(t *testing.T, p *proc, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.b.wake.mu.Lock()
		got := len(p.b.wake.remote[key])
		p.b.wake.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes known to wait for %q, want %d", got, key, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWakeupTurnsInOrder: with several processes waiting, each release
// wakes only the one that has waited longest, which takes the lock with
// one insert (no herd of failing attempts); the releasing process leaves
// the key to it; and the turns go in the order the waiters arrived.
func TestWakeupTurnsInOrder(t *testing.T) {
	const safety = 20 * time.Second
	const waiters = 4
	ps := newProcs(t, waiters+1, WithWakeups(true), WithSafetyPoll(safety))
	ctx := testCtx(t, 2*time.Minute)
	holder := newMutex(t, ps[0].b, "k", dsync.WithTTL(time.Minute))
	// One hold first, so the handoffs below release epochs >= 2, which a
	// named waiter can take without reading first.
	for range 2 {
		if err := holder.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := holder.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waitWakeups(t, ps[0].b)

	type grant struct {
		who int
		at  time.Time
	}
	granted := make(chan grant, waiters)
	release := make([]chan struct{}, waiters+1)
	var done sync.WaitGroup
	defer done.Wait()
	ctx, stop := context.WithCancel(ctx) // on failure, frees the goroutines
	defer stop()
	for i := 1; i <= waiters; i++ {
		release[i] = make(chan struct{})
		m := newMutex(t, ps[i].b, "k", dsync.WithTTL(time.Minute))
		done.Add(1)
		go func() {
			defer done.Done()
			if err := m.LockContext(ctx); err != nil {
				t.Error(err)
				return
			}
			granted <- grant{i, time.Now()}
			select {
			case <-release[i]:
			case <-ctx.Done():
			}
			if err := m.UnlockContext(context.WithoutCancel(ctx)); err != nil {
				t.Error(err)
			}
		}()
		queued(t, ps[0], "k", i) // arrival order: 1, 2, ...
	}
	// Let every waiter settle into its long sleep (after one poll
	// interval, in case the holder had not seen its announcement yet).
	time.Sleep(2 * DefaultPollInterval)
	for i := 1; i <= waiters; i++ {
		queued(t, ps[i], "k", waiters-1)
	}
	count := lockCommands(ps)
	count()

	unlocked := time.Now()
	if err := holder.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	// The releasing process leaves the key to the named waiter.
	if _, err := ps[0].b.Acquire(ctx, "k", "again", time.Minute); !errors.As(err, new(*dsync.HeldError)) {
		t.Fatalf("Acquire right after naming a successor = %v, want a HeldError", err)
	}
	for want := 1; want <= waiters; want++ {
		select {
		case g := <-granted:
			took := g.at.Sub(unlocked)
			t.Logf("turn %d: process %d, %v after the Unlock", want, g.who, took.Round(time.Millisecond))
			if g.who != want {
				t.Fatalf("process %d got turn %d, want process %d (arrival order)", g.who, want, want)
			}
			if took > safety/4 {
				t.Errorf("turn %d took %v: not woken by the release event", want, took)
			}
		case <-time.After(safety + 5*time.Second):
			t.Fatalf("turn %d never came", want)
		}
		n := count()
		for i := 1; i <= waiters; i++ {
			switch {
			case i == want && (n[i]["insert"] != 1 || n[i]["find"] > 1):
				t.Errorf("turn %d: the named process sent %v to the lock collection, want one insert and at most one read", want, n[i])
			case i != want && n[i]["insert"] != 0:
				t.Errorf("turn %d: process %d, not named, sent %v to the lock collection", want, i, n[i])
			}
		}
		unlocked = time.Now()
		close(release[want])
	}
}

// TestWakeupPassesTheTurnOn: a process named next that no longer waits
// passes its turn to the next in line at once; one that is gone costs the
// next waiter at most the safety poll interval.
func TestWakeupPassesTheTurnOn(t *testing.T) {
	const safety = 3 * time.Second
	for _, gone := range []bool{false, true} {
		name := "stopped waiting"
		if gone {
			name = "process gone"
		}
		t.Run(name, func(t *testing.T) {
			ps := newProcs(t, 3, WithWakeups(true), WithSafetyPoll(safety))
			ctx := testCtx(t, time.Minute)
			holder := newMutex(t, ps[0].b, "k", dsync.WithTTL(time.Minute))
			if err := holder.LockContext(ctx); err != nil {
				t.Fatal(err)
			}
			waitWakeups(t, ps[0].b)

			// Process 1 waits first, then stops waiting (or is closed).
			quitter := newMutex(t, ps[1].b, "k", dsync.WithTTL(time.Minute))
			qctx, cancel := context.WithCancel(ctx)
			quit := make(chan error, 1)
			go func() { quit <- quitter.LockContext(qctx) }()
			queued(t, ps[0], "k", 1)
			cancel()
			if err := <-quit; !errors.Is(err, context.Canceled) {
				t.Fatalf("LockContext = %v, want context.Canceled", err)
			}
			if gone {
				if err := ps[1].b.Close(); err != nil {
					t.Fatal(err)
				}
			}

			// Process 2 waits next.
			waiter := newMutex(t, ps[2].b, "k", dsync.WithTTL(time.Minute))
			got := lockInBackground(t, ctx, waiter)
			queued(t, ps[0], "k", 2)
			time.Sleep(2 * DefaultPollInterval) // settled into the long sleep

			unlocked := time.Now()
			if err := holder.UnlockContext(ctx); err != nil {
				t.Fatal(err)
			}
			at, ok := <-got
			if !ok {
				t.FailNow()
			}
			took := at.Sub(unlocked)
			t.Logf("the second in line got the lock %v after the Unlock", took.Round(time.Millisecond))
			limit := safety / 4 // passed on at once
			if gone {
				limit = safety + 1500*time.Millisecond
			}
			if took > limit {
				t.Errorf("the second in line waited %v, want at most %v", took, limit)
			}
			if err := waiter.UnlockContext(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWakeupSeveralWaitersInOneProcess: when a process releases to another
// process, or gets its turn, its other waiters for the key take their
// place in the queues again, so their turn comes by event too.
func TestWakeupSeveralWaitersInOneProcess(t *testing.T) {
	const safety = 20 * time.Second
	ps := newProcs(t, 2, WithWakeups(true), WithSafetyPoll(safety))
	ctx := testCtx(t, time.Minute)
	first := newMutex(t, ps[0].b, "k", dsync.WithTTL(time.Minute))
	if err := first.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waitWakeups(t, ps[0].b)

	other := newMutex(t, ps[1].b, "k", dsync.WithTTL(time.Minute))
	otherGot := lockInBackground(t, ctx, other)
	queued(t, ps[0], "k", 1)
	second := newMutex(t, ps[0].b, "k", dsync.WithTTL(time.Minute)) // same process as the holder
	secondGot := lockInBackground(t, ctx, second)
	time.Sleep(2 * DefaultPollInterval) // both settled into their long sleeps

	unlocked := time.Now()
	if err := first.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	at, ok := <-otherGot // the other process was waiting first
	if !ok {
		t.FailNow()
	}
	t.Logf("the other process got the lock %v after the Unlock", at.Sub(unlocked).Round(time.Millisecond))
	queued(t, ps[1], "k", 1) // the holder's process announced its second waiter again
	unlocked = time.Now()
	if err := other.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case at, ok := <-secondGot:
		if !ok {
			t.FailNow()
		}
		took := at.Sub(unlocked)
		t.Logf("the second waiter of the first process got it %v after the Unlock", took.Round(time.Millisecond))
		if took > safety/4 {
			t.Errorf("the second waiter took %v: not woken by the release event", took)
		}
	case <-time.After(safety + 5*time.Second):
		t.Fatal("the second waiter never got the lock")
	}
	if err := second.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWakeupLateFollowerLearnsTheQueue: a process that starts following
// events after a waiter announced itself, with that announcement trimmed
// away, learns of the waiter (which announces itself again when it sees
// the newcomer's cursor open) and hands the lock to it by event.
func TestWakeupLateFollowerLearnsTheQueue(t *testing.T) {
	const safety = 20 * time.Second
	ps := newProcs(t, 2, WithWakeups(true), WithSafetyPoll(safety))
	ctx := testCtx(t, time.Minute)
	holder := newMutex(t, ps[0].b, "k", dsync.WithTTL(time.Minute))
	ps[0].b.cfg.wakeups = false // acquire without starting to follow events
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	ps[0].b.cfg.wakeups = true

	waiter := newMutex(t, ps[1].b, "k", dsync.WithTTL(time.Minute))
	got := lockInBackground(t, ctx, waiter)
	for {
		ps[1].b.wake.mu.Lock()
		_, announced := ps[1].b.wake.announced["k"]
		ps[1].b.wake.mu.Unlock()
		if announced {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(2 * DefaultPollInterval) // settled; its announcement is out
	// Trim the announcement away, but not the event the waiter's cursor
	// stands on (that would kill the cursor).
	if _, err := ps[1].b.events.InsertOne(ctx, bson.D{{Key: "kind", Value: "test"}, {Key: "proc", Value: "test"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := ps[1].b.events.DeleteMany(ctx, bson.D{{Key: "kind", Value: eventWait}}); err != nil {
		t.Fatal(err)
	}

	est, err := ps[0].b.prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps[0].b.wake.start(est)
	waitWakeups(t, ps[0].b)
	queued(t, ps[0], "k", 1)

	unlocked := time.Now()
	if err := holder.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	at, ok := <-got
	if !ok {
		t.FailNow()
	}
	took := at.Sub(unlocked)
	t.Logf("the waiter got the lock %v after the Unlock", took.Round(time.Millisecond))
	if took > safety/4 {
		t.Errorf("the waiter took %v: not woken by the release event", took)
	}
	if err := waiter.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}
