package dsyncmongo

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// tail returns b's follower of the event stream, or nil.
func tail(b *testClient) *tailer { return b.s.feed.follower() }

// follower returns the feed's follower of the event stream, or nil.
func (f *feed) follower() *tailer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tail
}

// waitWakeups waits until b follows the event stream.
func waitWakeups(t *testing.T, b *testClient) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); tail(b) == nil || !tail(b).healthy.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the event stream did not open within 30s")
		}
	}
}

// follow makes b follow the event stream (as its first session does) and
// waits until the stream is live.
func follow(t *testing.T, ctx context.Context, b *testClient) {
	t.Helper()
	open(t, ctx, b, time.Minute)
	waitWakeups(t, b)
}

// announce publishes through b that proc waits for key's epoch.
func announce(t *testing.T, ctx context.Context, b *testClient, proc, key string, epoch uint64) {
	t.Helper()
	until := b.s.ServerTime().Earliest.Add(time.Minute)
	if err := b.s.Roles().Feed.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: key, Epoch: epoch, Until: until, Proc: proc}); err != nil {
		t.Fatal(err)
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

// wokenWithin bounds a handoff by the release event in tests whose poll
// intervals are ten minutes: a second, normally; a minute on a machine
// busy at four times its cores still tells it from a poll.
const wokenWithin = time.Minute

// handoff has ps[0] hold key while ps[1] waits in LockContext until it has
// settled into a stretched wait, then unlocks, and returns how long the
// waiter took to get the lock after the Unlock returned. Before unlocking,
// between may act (kill a cursor, ...).
func handoff(t *testing.T, ps []*proc, key string, between func()) time.Duration {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	holder := newMutex(t, ps[0].b.Client, key)
	waiter := newMutex(t, ps[1].b.Client, key)
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if ps[0].b.wakeups {
		waitWakeups(t, ps[0].b)
	}
	got := lockInBackground(t, ctx, waiter)
	// The waiter announces itself, waits one poll interval (the holder may
	// not have seen the announcement yet), then sleeps until the safety
	// poll interval, unless woken. With wake-ups on both sides, the
	// holder has seen the announcement before it unlocks: on a busy
	// machine that can take longer than the sleep.
	if ps[0].b.wakeups && ps[1].b.wakeups {
		waitAnnounced(t, ctx, ps[0].b, key, 1)
	}
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
// The poll intervals are long enough that nothing else hands over within
// wokenWithin, however busy the machine.
func TestWakeupHandsOverFast(t *testing.T) {
	t.Parallel()
	const safety = 10 * time.Minute
	ps := newProcs(t, 2, dsync.ClientWithSafetyPoll(safety), dsync.ClientWithPollInterval(safety))
	for i := range 3 {
		took := handoff(t, ps, "k", nil)
		t.Logf("handoff %d: %v after Unlock (safety poll and poll %v)", i, took.Round(time.Millisecond), safety)
		if took > wokenWithin {
			t.Errorf("handoff %d took %v: not woken by the release event", i, took)
		}
	}
}

// TestWaiterAnnouncesOnceTheStreamIsLive: a waiter whose process's event
// stream turns live only after it began to wait (here its events
// collection check is held up for a second) announces itself then, and is
// woken by the release, rather than sleeping for its poll interval.
func TestWaiterAnnouncesOnceTheStreamIsLive(t *testing.T) {
	t.Parallel()
	const safety = 10 * time.Minute
	opts := []any{dsync.ClientWithSafetyPoll(safety), dsync.ClientWithPollInterval(safety)}
	ps := newProcs(t, 1, opts...)
	slowStream := func(op string) error {
		if op == "create events" {
			time.Sleep(time.Second)
		}
		return nil
	}
	db := mongotest.SameDatabase(t, ps[0].db)
	ps = append(ps, &proc{db: db, b: newBackend(t, db, append(opts, withFault(slowStream))...)})
	took := handoff(t, ps, "k", nil)
	t.Logf("handoff %v after Unlock (safety poll and poll %v; the waiter's stream live after 1s)", took.Round(time.Millisecond), safety)
	if took > wokenWithin {
		t.Errorf("handoff took %v: the waiter never announced itself", took)
	}
}

// TestWakeupLossNeverStallsBeyondSafetyPoll: with the waiter's event cursor
// killed, or a holder that sends no events, the waiter still gets the lock
// within the safety poll interval.
func TestWakeupLossNeverStallsBeyondSafetyPoll(t *testing.T) {
	t.Parallel()
	const safety = 2 * time.Second
	// The handoff takes about the safety poll, and a busy machine's
	// scheduling more: a waiter that stalls beyond it never wakes.
	const slack = 4 * safety
	t.Run("cursor killed", func(t *testing.T) {
		// The event await set to the safety poll, as WithEventAwait
		// advises: the killed cursor's getMore in flight ends within it,
		// and the stream comes back then.
		ps := newProcs(t, 2, dsync.ClientWithSafetyPoll(safety), WithEventAwait(safety))
		took := handoff(t, ps, "k", func() {
			waitWakeups(t, ps[1].b)
			w := tail(ps[1].b)
			id := w.cursor.Load()
			ctx := testCtx(t, 10*time.Second)
			err := ps[1].db.RunCommand(ctx, bson.D{
				{Key: "killCursors", Value: ps[1].b.s.cfg.collection + eventsSuffix},
				{Key: "cursors", Value: bson.A{id}},
			}).Err()
			if err != nil {
				t.Fatalf("killCursors: %v", err)
			}
			for w.healthy.Load() && w.cursor.Load() == id { // the waiter notices
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
			ps[i] = &proc{db: db, b: newBackend(t, db, dsync.ClientWithSafetyPoll(safety)), cmd: c}
		}
		took := handoff(t, ps, "k", func() {
			waitWakeups(t, ps[1].b)
			srv.Kill()
			for tail(ps[1].b).healthy.Load() {
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
		ps := newProcs(t, 1, dsync.ClientWithSafetyPoll(safety))
		// The holder's process does not follow events: it never learns of
		// the waiter, and the waiter is never told.
		db := mongotest.SameDatabase(t, ps[0].db)
		ps = append([]*proc{{db: db, b: newBackend(t, db, dsync.ClientWithSafetyPoll(safety), withoutWakeups())}}, ps...)
		took := handoff(t, ps, "k", nil)
		t.Logf("handoff without an event: %v", took.Round(time.Millisecond))
		if took > safety+slack {
			t.Errorf("waiter stalled %v, safety poll %v", took, safety)
		}
	})
}

// TestWakeupsOffPolls: without wake-ups, no events collection is used.
func TestWakeupsOffPolls(t *testing.T) {
	t.Parallel()
	ps := newProcs(t, 2, withoutWakeups())
	took := handoff(t, ps, "k", nil)
	t.Logf("handoff by polling: %v", took.Round(time.Millisecond))
	// Two polls, normally; a busy machine's scheduling adds seconds, and
	// a waiter that did not poll would sleep the safety poll (15 s).
	if took > dsync.DefaultSafetyPoll*2/3 {
		t.Errorf("handoff by polling took %v (poll %v, safety poll %v)", took, dsync.DefaultPollInterval, dsync.DefaultSafetyPoll)
	}
	for _, p := range ps {
		if n := p.cmd.take(); n["getMore"] != 0 || n["create"] != 0 {
			t.Errorf("commands %v with wake-ups off", n)
		}
	}
}

// TestCloseStopsTheTailer: Close waits for the goroutine following events.
func TestCloseStopsTheTailer(t *testing.T) {
	p := newProcs(t, 1, dsync.ClientWithTTL(time.Minute))[0]
	ctx := testCtx(t, 30*time.Second)
	open(t, ctx, p.b, time.Minute) // starts following events
	waitWakeups(t, p.b)
	if err := p.b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tail(p.b).done:
	default:
		t.Fatal("Close returned before the tailer stopped")
	}
}

// TestWakeupTurnsInOrder: processes that queue for a key hold it in the
// order they queued, each woken by the previous holder's release event,
// far sooner than the safety poll interval; no process reads the queue
// from events.
func TestWakeupTurnsInOrder(t *testing.T) {
	const safety = 20 * time.Second
	ps := newProcs(t, 4, dsync.ClientWithSafetyPoll(safety), dsync.ClientWithPollInterval(safety))
	ctx := testCtx(t, 2*time.Minute)
	ms := make([]*dsync.Mutex, len(ps))
	for i, p := range ps {
		ms[i] = newMutex(t, p.b.Client, "k")
	}
	if err := ms[0].LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		open(t, ctx, p.b, time.Minute)
		waitWakeups(t, p.b)
	}
	type turn struct {
		who int
		at  time.Time
	}
	turns := make(chan turn, len(ps))
	for i := 1; i < len(ps); i++ {
		go func() {
			if err := ms[i].LockContext(ctx); err != nil {
				t.Error(err)
				return
			}
			turns <- turn{i, time.Now()}
		}()
		waitQueued(t, ctx, ps[0].b, "k", i+1) // queue in order 1, 2, 3
	}
	waitAnnounced(t, ctx, ps[0].b, "k", len(ps)-1)
	unlocked := time.Now()
	if err := ms[0].UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	for want := 1; want < len(ps); want++ {
		select {
		case tu := <-turns:
			took := tu.at.Sub(unlocked)
			t.Logf("turn %d: process %d, %v after the previous Unlock", want, tu.who, took.Round(time.Millisecond))
			if tu.who != want {
				t.Fatalf("process %d held before process %d, which queued first", tu.who, want)
			}
			if took > 2*time.Second {
				t.Errorf("turn %d came %v after the Unlock: not woken by the event", want, took)
			}
			unlocked = time.Now()
			if err := ms[tu.who].UnlockContext(ctx); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
}

// TestWakeupSeveralWaitersInOneProcess: waiters of one process on one key
// are woken directly by their own process's releases, in order.
func TestWakeupSeveralWaitersInOneProcess(t *testing.T) {
	p := newProcs(t, 1, dsync.ClientWithSafetyPoll(20*time.Second), dsync.ClientWithPollInterval(20*time.Second), dsync.ClientWithTTL(time.Minute))[0]
	ctx := testCtx(t, time.Minute)
	const n = 4
	ms := make([]*dsync.Mutex, n)
	for i := range ms {
		ms[i] = newMutex(t, p.b.Client, "k")
	}
	if err := ms[0].LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	got := make([]<-chan time.Time, n)
	for i := 1; i < n; i++ {
		got[i] = lockInBackground(t, ctx, ms[i])
		waitQueued(t, ctx, p.b, "k", i+1) // queue in order 1, 2, 3
	}
	for i := 1; i < n; i++ {
		unlocked := time.Now()
		if err := ms[i-1].UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
		at, ok := <-got[i]
		if !ok {
			t.FailNow()
		}
		if took := at.Sub(unlocked); took > 2*time.Second {
			t.Errorf("waiter %d held %v after the Unlock: not woken directly", i, took)
		}
	}
	if err := ms[n-1].UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitTailerGone waits until b's event tailer has stopped for good.
func waitTailerGone(t *testing.T, b *testClient) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var done chan struct{}
	for done == nil {
		if t := tail(b); t != nil {
			done = t.done
		}
		if time.Now().After(deadline) {
			t.Fatal("the event tailer never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(time.Until(deadline)):
		t.Fatal("the event tailer keeps trying: want it to give up and leave waiters to poll")
	}
}

// TestEventsUnusable: an events collection that is not capped, or a
// server without capped collections (simulated), turns wake-ups off for
// good with one clear warning; locking works on, by polling.
func TestEventsUnusable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool  // create the events collection uncapped first
		fault error // the error of creating the capped collection
		want  string
	}{
		{"not capped", true, nil, "the events collection exists but is not capped"},
		{"no capped collections", false, mongo.CommandError{Code: 8000, Name: "AtlasError", Message: "capped collections are not allowed on this tier"}, "the server does not support capped collections"},
		{"command not supported", false, mongo.CommandError{Code: 115, Name: "CommandNotSupported", Message: "Capped collections are not supported"}, "the server does not support capped collections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			if tc.plain {
				if err := db.CreateCollection(testCtx(t, 30*time.Second), DefaultCollection+eventsSuffix); err != nil {
					t.Fatal(err)
				}
			}
			logs := &logRecords{}
			b := newBackend(t, db, dsync.ClientWithWakeups(true), dsync.ClientWithPollInterval(50*time.Millisecond), WithLogger(slog.New(logs)), dsync.ClientWithLogger(slog.New(logs)), dsync.ClientWithTTL(time.Minute),
				withFault(faultOn("create events", tc.fault)))
			ctx := testCtx(t, 30*time.Second)
			holder := newMutex(t, b.Client, "k")
			if err := holder.LockContext(ctx); err != nil {
				t.Fatal(err)
			}
			waiter := newMutex(t, b.Client, "k")
			got := lockInBackground(t, ctx, waiter)
			waitTailerGone(t, b)
			if msgs := logs.warnings("wake-ups are off"); len(msgs) != 1 || !strings.Contains(msgs[0], tc.want) || !strings.Contains(msgs[0], "waiters poll") {
				t.Errorf("warnings %q, want one saying %q and that waiters poll", msgs, tc.want)
			}
			if msgs := logs.warnings("event stream unavailable"); len(msgs) != 0 {
				t.Errorf("warnings %q: want only the one that wake-ups are off", msgs)
			}
			if err := holder.UnlockContext(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok := <-got; !ok {
				t.FailNow()
			}
			if err := waiter.UnlockContext(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(logs.warnings("wake-ups are off")); n != 1 {
				t.Errorf("%d warnings, want one", n)
			}
		})
	}
}

// TestEventsTrimmedOnlyOnFerretDB: the backend deletes old events itself
// only on FerretDB; MongoDB bounds a capped collection itself.
func TestEventsTrimmedOnlyOnFerretDB(t *testing.T) {
	for _, ferret := range []bool{true, false} {
		t.Run(map[bool]string{true: "FerretDB", false: "MongoDB"}[ferret], func(t *testing.T) {
			var deletes atomic.Int32
			db := mongotest.NewDatabase(t, options.Client().SetMonitor(&event.CommandMonitor{
				Started: func(_ context.Context, e *event.CommandStartedEvent) {
					if coll, _ := e.Command.Lookup("delete").StringValueOK(); coll == DefaultCollection+eventsSuffix {
						deletes.Add(1)
					}
				},
			}))
			b := newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(ferret))
			ctx := testCtx(t, 30*time.Second)
			follow(t, ctx, b)
			base := tail(b).ownSeen.Load()
			const n = 4
			for i := range n {
				announce(t, ctx, b, "us", "k", uint64(i+1))
			}
			for tail(b).ownSeen.Load() < base+n {
				select {
				case <-ctx.Done():
					t.Fatalf("the tailer saw %d of our %d events", tail(b).ownSeen.Load()-base, n)
				case <-time.After(5 * time.Millisecond):
				}
			}
			if !ferret {
				if d := deletes.Load(); d != 0 {
					t.Errorf("%d deletes of events after %d events of ours, want none", d, n)
				}
				return
			}
			// On FerretDB a trim follows trimSlack after an event of ours.
			for deletes.Load() == 0 {
				select {
				case <-ctx.Done():
					t.Fatalf("no delete of events after %d events of ours", n)
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
}

// awaitsWatched returns two processes on one database whose event streams
// have the safety poll and event await safety (as on FerretDB when ferret
// is set), a context of 30 s, and next, which returns the wait of the
// next getMore of the event cursor that either sends, failing the test if
// none comes within the context.
func awaitsWatched(t *testing.T, ferret bool, safety time.Duration) (b, other *testClient, ctx context.Context, next func() time.Duration) {
	awaits := make(chan time.Duration, 64)
	db := mongotest.NewDatabase(t, options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if coll, _ := e.Command.Lookup("collection").StringValueOK(); e.CommandName == "getMore" && coll == DefaultCollection+eventsSuffix {
				ms, _ := e.Command.Lookup("maxTimeMS").AsInt64OK()
				select {
				case awaits <- time.Duration(ms) * time.Millisecond:
				default:
				}
			}
		},
	}))
	b = newBackend(t, db, dsync.ClientWithWakeups(true), dsync.ClientWithSafetyPoll(safety), WithEventAwait(safety), asFerretDB(ferret))
	other = newBackend(t, mongotest.SameDatabase(t, db), dsync.ClientWithWakeups(true), dsync.ClientWithSafetyPoll(safety), WithEventAwait(safety), asFerretDB(ferret))
	ctx = testCtx(t, 30*time.Second)
	next = func() time.Duration {
		t.Helper()
		select {
		case d := <-awaits:
			return d
		case <-ctx.Done():
			t.Fatal("no getMore of the event cursor within 30s")
			return 0
		}
	}
	return b, other, ctx, next
}

// TestEventAwaitShortOnFerretDB: a getMore of the event cursor waits the
// safety poll interval; on FerretDB, where a waiting getMore costs the
// server more the longer it waits, at most ferretAwait once another
// process announced that it waits.
func TestEventAwaitShortOnFerretDB(t *testing.T) {
	const safety = 20 * time.Second
	for _, ferret := range []bool{true, false} {
		t.Run(map[bool]string{true: "FerretDB", false: "MongoDB"}[ferret], func(t *testing.T) {
			b, other, ctx, next := awaitsWatched(t, ferret, safety)
			follow(t, ctx, b)
			if got := next(); got != safety {
				t.Errorf("alone: getMore of the event cursor waits up to %v, want %v", got, safety)
			}
			if err := other.s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			announce(t, ctx, other, "other", "k", 1)
			// The announcement ends the getMore in flight; the next one
			// waits as long as the others waiting call for.
			want := safety
			if ferret {
				want = ferretAwait
			}
			if got := next(); got != want {
				t.Errorf("while another process waits: getMore of the event cursor waits up to %v, want %v", got, want)
			}
		})
	}
}

// TestWakeupsWithAnOperationTimeout: a client with an operation timeout
// shorter than the safety poll interval (options.Client().SetTimeout, as
// the integration suite's workers use) still follows the event stream,
// its getMores waiting the whole safety poll interval (the driver refuses
// them under the client's timeout), and the stream stays open through
// getMores that find nothing for longer than any one getMore's deadline.
func TestWakeupsWithAnOperationTimeout(t *testing.T) {
	t.Parallel()
	const timeout, safety = 500 * time.Millisecond, time.Second
	const rounds = 8 // empty getMores: longer than safety + getMoreSlack
	awaits := make(chan time.Duration, 64)
	var opens atomic.Int32
	db := mongotest.NewDatabase(t, options.Client().SetTimeout(timeout).SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if coll, _ := e.Command.Lookup("find").StringValueOK(); coll == DefaultCollection+eventsSuffix {
				opens.Add(1)
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			if e.CommandName == "getMore" {
				select {
				case awaits <- e.Duration:
				default:
				}
			}
		},
	}))
	b := newBackend(t, db, dsync.ClientWithWakeups(true), dsync.ClientWithSafetyPoll(safety), WithEventAwait(safety))
	ctx := testCtx(t, 60*time.Second)
	follow(t, ctx, b)
	for n := 0; n < rounds; {
		select {
		case d := <-awaits:
			if d > timeout {
				n++
			}
		case <-ctx.Done():
			t.Fatalf("%d getMores of the event cursor waited past the operation timeout within 60s, want %d", n, rounds)
		}
	}
	if !tail(b).healthy.Load() {
		t.Fatal("the event stream failed under an operation timeout")
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("the event stream was opened %d times during %d empty getMores, want once", n, rounds)
	}
}

// A live stream whose cursor fails is reopened at once, without going
// down (waiters do not fall back to polling, nor announce themselves
// again) and without an event of its own: on FerretDB each event makes
// others trim, and a trim fails the cursors that sit on what it deletes.
// Its new cursor starts at an event it passed before, so it missed
// nothing, and the handler is not told it turned live again (its waiters
// would all look again: one read each, for every reopening).
func TestStreamReopensQuietlyAfterACursorFailure(t *testing.T) {
	t.Parallel()
	var inserts atomic.Int32
	db := mongotest.NewDatabase(t, options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if coll, _ := e.Command.Lookup("insert").StringValueOK(); coll == DefaultCollection+eventsSuffix {
				inserts.Add(1)
			}
		},
	}))
	logs := &logRecords{}
	b := newBackend(t, db, dsync.ClientWithWakeups(true), dsync.ClientWithSafetyPoll(2*time.Second), WithEventAwait(2*time.Second), WithLogger(slog.New(logs)))
	other := newBackend(t, mongotest.SameDatabase(t, db), dsync.ClientWithWakeups(true))
	ctx := testCtx(t, 30*time.Second)
	follow(t, ctx, b)
	w := tail(b)
	id := w.cursor.Load()
	gen := w.gen.Load()
	before := inserts.Load()
	if err := db.RunCommand(ctx, bson.D{
		{Key: "killCursors", Value: DefaultCollection + eventsSuffix},
		{Key: "cursors", Value: bson.A{id}},
	}).Err(); err != nil {
		t.Fatalf("killCursors: %v", err)
	}
	killed := time.Now()
	for !w.healthy.Load() || w.cursor.Load() == id {
		select {
		case <-ctx.Done():
			t.Fatal("the stream was not reopened")
		case <-time.After(time.Millisecond):
		}
	}
	if n := inserts.Load() - before; n != 0 {
		t.Errorf("%d events inserted by the reopening, want none", n)
	}
	if msgs := logs.warnings("event stream unavailable"); len(msgs) != 0 {
		t.Errorf("the stream went down: %q", msgs)
	}
	if g := w.gen.Load(); g != gen {
		t.Errorf("the handler was told the stream turned live again (%d times, then %d), though it missed nothing", gen, g)
	}
	t.Logf("reopened %v after the kill (a getMore in flight ends first)", time.Since(killed).Round(time.Millisecond))
	// It is live: another process's announcement reaches it.
	if err := other.s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	announced := time.Now()
	announce(t, ctx, other, "other", "k", 7)
	defer func() {
		t.Logf("another process's event passed %v after it was sent", time.Since(announced).Round(time.Millisecond))
	}()
	for w.othersWaitAt.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the reopened stream did not pass another process's event")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestReopenedStreamTellsWhatItMayHaveMissed: a stream whose cursor failed
// because the events it had reached were deleted (on FerretDB, a cursor
// fails when the last event it returned is deleted) reopens on events it
// never passed: events may have gone unseen in between, and the handler
// is told the stream turned live again (its waiters look again), and
// gets the event that is there.
func TestReopenedStreamTellsWhatItMayHaveMissed(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("a cursor fails when its event is deleted on FerretDB")
	}
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, dsync.ClientWithWakeups(true), dsync.ClientWithSafetyPoll(2*time.Second))
	other := newBackend(t, mongotest.SameDatabase(t, db), dsync.ClientWithWakeups(true))
	ctx := testCtx(t, 30*time.Second)
	follow(t, ctx, b)
	w := tail(b)
	gen := w.gen.Load()
	if err := other.s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	// Everything the cursor passed goes; another process's event comes.
	events := db.Collection(DefaultCollection + eventsSuffix)
	if _, err := events.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	announce(t, ctx, other, "other", "k", 7)
	for w.gen.Load() == gen || w.othersWaitAt.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("told live %d times (%d before), another's event passed: %v; want told once more, and the event",
				w.gen.Load(), gen, w.othersWaitAt.Load() != 0)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestEndSentAgainWhenOvertaken: on FerretDB a cursor returns events in
// the order of record ids given before the inserts commit, so a cursor
// that returned an event whose insert overtook an end never returns the
// end, and the waiter it should have woken sleeps until its safety poll.
// An end after which the collection holds an event sent before the end
// landed, or that is gone, is sent again; one that nothing can have
// overtaken is sent once.
func TestEndSentAgainWhenOvertaken(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("MongoDB's cursors do not pass over an insert that commits late")
	}
	for _, tc := range []struct {
		name  string
		meta  func(ctx context.Context, events *mongo.Collection) error // as the end lands
		sends int                                                       // ends in the collection after
	}{
		{"overtaken", func(ctx context.Context, events *mongo.Collection) error {
			// Sent a minute ago (before ours landed), after ours in the
			// collection: it may have committed first.
			_, err := events.InsertOne(ctx, eventDoc{ID: bson.NewObjectID(), Kind: eventWait, Proc: "other", Key: "k", Epoch: 9,
				At: time.Now().Add(-time.Minute), Until: time.Now().Add(time.Hour)})
			return err
		}, 2},
		{"deleted", func(ctx context.Context, events *mongo.Collection) error {
			_, err := events.DeleteMany(ctx, bson.D{{Key: "kind", Value: eventEnded}})
			return err
		}, 1},
		{"sent after it landed", func(ctx context.Context, events *mongo.Collection) error {
			_, err := events.InsertOne(ctx, eventDoc{ID: bson.NewObjectID(), Kind: eventWait, Proc: "other", Key: "k", Epoch: 9,
				At: time.Now().Add(time.Minute), Until: time.Now().Add(time.Hour)})
			return err
		}, 1},
		{"alone", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			events := db.Collection(DefaultCollection + eventsSuffix)
			ctx := testCtx(t, 30*time.Second)
			var once sync.Once
			hook := func(op string) error {
				if op == "event landed" && tc.meta != nil {
					once.Do(func() {
						if err := tc.meta(ctx, events); err != nil {
							t.Error(err)
						}
					})
				}
				return nil
			}
			b := newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(true), withFault(hook))
			follow(t, ctx, b)
			if err := b.s.Roles().Feed.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k", Epoch: 5, Proc: "us"}); err != nil {
				t.Fatal(err)
			}
			n, err := events.CountDocuments(ctx, bson.D{{Key: "kind", Value: eventEnded}, {Key: "key", Value: "k"}, {Key: "epoch", Value: 5}})
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(tc.sends) {
				t.Errorf("%d ends in the collection, want %d", n, tc.sends)
			}
		})
	}
}

// TestEndDeletesLeftoverEvents: events their senders did not delete (a
// process that stopped, or whose follower lags far behind: each process
// deletes only its own, trim.go) are deleted by a process that sends an
// end, which reads the collection anyway: those sent leftoverAge or more
// before, but the collection's last event.
func TestEndDeletesLeftoverEvents(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("trimming is FerretDB's alone")
	}
	db := mongotest.NewDatabase(t)
	events := db.Collection(DefaultCollection + eventsSuffix)
	b := newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(true))
	ctx := testCtx(t, 30*time.Second)
	follow(t, ctx, b)
	old := func() bson.ObjectID {
		t.Helper()
		id := bson.NewObjectID()
		if _, err := events.InsertOne(ctx, eventDoc{ID: id, Kind: eventWait, Proc: "gone", Key: "k", Epoch: 3,
			At: time.Now().Add(-time.Minute), Until: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	left := []bson.ObjectID{old(), old()}
	// The collection's last event stays, however old.
	if _, leftovers, err := b.s.feed.landedLate(ctx, bson.NewObjectID(), b.s.ServerTime().Latest); err != nil || len(leftovers) != 1 || leftovers[0] != left[0] {
		t.Errorf("leftovers %v (%v), want the first of %v alone", leftovers, err, left)
	}
	if err := b.s.Roles().Feed.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k", Epoch: 5, Proc: "us"}); err != nil {
		t.Fatal(err)
	}
	n, err := events.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: left}}}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d of the %d events left over are still there, want none", n, len(left))
	}
}

// TestOpeningDeletesLeftoverEvents: a process that opens its stream
// deletes the events their senders left (sent leftoverAge or more before
// its "open"), but the newest of them before its own, on which cursors
// that keep up may sit; and it does so before its Close returns, however
// soon that comes (a job run from cron locks once and exits). Others'
// recent events stay.
func TestOpeningDeletesLeftoverEvents(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("trimming is FerretDB's alone")
	}
	db := mongotest.NewDatabase(t)
	events := db.Collection(DefaultCollection + eventsSuffix)
	ctx := testCtx(t, 30*time.Second)
	first := newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(true))
	follow(t, ctx, first) // creates the collection; its "open" event is recent
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var left []bson.ObjectID
	for range 3 {
		id := bson.NewObjectID()
		if _, err := events.InsertOne(ctx, eventDoc{ID: id, Kind: eventWait, Proc: "gone", Key: "k", Epoch: 3,
			At: time.Now().Add(-time.Minute), Until: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	before, err := events.CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(true))
	follow(t, ctx, b)
	if err := b.Close(); err != nil { // at once: within trimSlack of the open
		t.Fatal(err)
	}
	for i, id := range left {
		n, err := events.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if i == len(left)-1 { // the newest before the stream's "open" stays
			want = 1
		}
		if n != want {
			t.Errorf("event %d of %d left over: %d in the collection, want %d", i+1, len(left), n, want)
		}
	}
	after, err := events.CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	// The first process's "open" event (recent) and the last left over
	// stay, and the new process's "open" joins them.
	if after != before-2+1 {
		t.Errorf("the events collection held %d events before the stream opened, %d after its Close, want %d", before, after, before-1)
	}
}

// waitQueued waits until key's queue, as b reads it, holds n claims that
// have not ended: the claims made so far have landed, in their order.
func waitQueued(t *testing.T, ctx context.Context, b *testClient, key string, n int) {
	t.Helper()
	for {
		q, err := statuspage.NewReader(b.Client).Queue(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(q) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("key %q's queue holds %d claims, want %d", key, len(q), n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitAnnounced waits until n processes announced in the store's events
// that they wait for key, and b's follower of the stream has seen another
// process announce it: b's release of key then publishes its end.
func waitAnnounced(t *testing.T, ctx context.Context, b *testClient, key string, n int) {
	t.Helper()
	for {
		cur, err := b.s.feed.events.Find(ctx, bson.D{{Key: "kind", Value: eventWait}, {Key: "key", Value: key}})
		if err != nil {
			t.Fatal(err)
		}
		var events []eventDoc
		if err := cur.All(ctx, &events); err != nil {
			t.Fatal(err)
		}
		procs := make(map[string]bool)
		for _, e := range events {
			procs[e.Proc] = true
		}
		if len(procs) >= n && tail(b) != nil && tail(b).othersWaitAt.Load() != 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d processes announced they wait for %q, want %d", len(procs), key, n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
