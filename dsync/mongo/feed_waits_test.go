package dsyncmongo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
)

// TestEventAwaitLongOnceTheWaitedClaimEnds: on FerretDB, a getMore of the
// event cursor waits at most ferretAwait while another process waits,
// and the safety poll interval again once the claim it waited for ended,
// though its announcement still holds (issue 45: after a member joined a
// partition and took its shards over, every member sent a getMore every
// 5 s for the hour the announcements held, with no one waiting). The
// othersWaitGrace after the announcement is taken as passed.
func TestEventAwaitLongOnceTheWaitedClaimEnds(t *testing.T) {
	const safety = 20 * time.Second
	b, other, ctx, next := awaitsWatched(t, true, safety)
	follow(t, ctx, b)
	if got := next(); got != safety {
		t.Fatalf("alone: getMore of the event cursor waits up to %v, want %v", got, safety)
	}
	if err := other.s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	announce(t, ctx, other, "other", "k", 1) // holds a minute
	if got := next(); got != ferretAwait {
		t.Fatalf("while another process waits: getMore of the event cursor waits up to %v, want %v", got, ferretAwait)
	}
	tail(b).othersWaitAt.Store(0) // the window after the announcement has passed
	// The end of the claim waited for ends the getMore in flight.
	if err := other.s.Roles().Feed.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k", Epoch: 1, Proc: "owner"}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != safety {
		t.Errorf("once the claim waited for ended: getMore of the event cursor waits up to %v, want %v", got, safety)
	}
}

// TestEventAwaitLongOnceTheWaiterWithdrew: on FerretDB, a getMore of
// the event cursor waits the safety poll interval again once the other
// process that waited gave its claim up (its LockContext ended), though
// the claim it waited for goes on: the waiter says its own claim ended
// (issue 45: a partition member that queued for a shard it was no longer
// assigned withdrew, and every member sent a getMore every 5 s for the
// hour its announcement held). The othersWaitGrace after the
// announcement is taken as passed.
func TestEventAwaitLongOnceTheWaiterWithdrew(t *testing.T) {
	const safety = 20 * time.Second
	b, other, ctx, _ := awaitsWatched(t, true, safety)
	wctx, cancel := context.WithCancel(ctx)
	held, _, done := holdAndWait(t, ctx, wctx, b, other)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter's LockContext returned %v, want context.Canceled", err)
	}
	tail(b).othersWaitAt.Store(0) // the window after the announcement has passed
	for tail(b).awaitTime() != safety {
		select {
		case <-ctx.Done():
			t.Fatalf("after the waiter withdrew: getMore of the event cursor waits up to %v, want %v", tail(b).awaitTime(), safety)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := held.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEventAwaitLongOnceItsOwnClaimEnded: on FerretDB, the process whose
// claim another process waited for sends getMores of the safety poll
// interval again once it released that claim: its own end, which its
// stream shows as ours, ends the wait it counted. Before, only another
// process's end did, and in a queue of two (the bench's idle waiter,
// whose former holder had waited for its claims) each kept its getMores
// at ferretAwait for the hour the other's announcements held: the idle
// waiter sent a getMore every 5 s where 15 s would do. The
// othersWaitGrace after the announcement is taken as passed.
func TestEventAwaitLongOnceItsOwnClaimEnded(t *testing.T) {
	const safety = 20 * time.Second
	b, other, ctx, _ := awaitsWatched(t, true, safety)
	held, waiter, done := holdAndWait(t, ctx, ctx, b, other)
	tail(b).othersWaitAt.Store(0) // the window after the announcement has passed
	if got := tail(b).awaitTime(); got != ferretAwait {
		t.Fatalf("while another process waits for its claim: getMore of the event cursor waits up to %v, want %v", got, ferretAwait)
	}
	if err := held.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiter's LockContext: %v", err)
	}
	for {
		tail(b).othersWaitAt.Store(0)
		if tail(b).awaitTime() == safety {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after its claim ended: getMore of the event cursor waits up to %v, want %v", tail(b).awaitTime(), safety)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := waiter.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWaitsSeen: a wait counts until the claim it names ends, the
// waiter's own claim ends (it withdrew), or its announcement lapses; past
// maxWaitsSeen waits, the forgotten ones count until the latest of their
// announcements lapses.
func TestWaitsSeen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w waitsSeen
	if w.any(t0) {
		t.Fatal("no announcement seen: a wait counts")
	}
	w.waiting("k", 1, 0, t0.Add(time.Hour))
	w.waiting("k", 2, 0, t0.Add(time.Minute))
	if !w.any(t0) {
		t.Fatal("two announcements hold: no wait counts")
	}
	w.ended("k", 1)
	if !w.any(t0) {
		t.Fatal("the wait for k/2 still holds: no wait counts")
	}
	if w.any(t0.Add(time.Minute)) {
		t.Error("k/1 ended and k/2's announcement lapsed: a wait still counts")
	}
	for i := range maxWaitsSeen + 1 {
		w.waiting("many", int64(i), 0, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if w.n > maxWaitsSeen {
		t.Errorf("%d waits remembered; want at most %d", w.n, maxWaitsSeen)
	}
	w.ended("many", maxWaitsSeen)                          // the only one remembered
	lapse := t0.Add((maxWaitsSeen - 1) * time.Millisecond) // the latest forgotten
	if !w.any(lapse.Add(-time.Nanosecond)) {
		t.Error("the waits forgotten past the bound no longer count before their announcements lapse")
	}
	if w.any(lapse) {
		t.Error("a wait counts after every announcement lapsed")
	}
}

// TestWaitsSeenEndWithTheWaitersClaim: a wait ends when the waiter's own
// claim ends (it withdrew), though the claim it waited for goes on; a
// wait whose waiter did not tell its claim (an older dsync) does not,
// nor does another waiter's wait for the same claim.
func TestWaitsSeenEndWithTheWaitersClaim(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w waitsSeen
	w.waiting("k", 1, 2, t0.Add(time.Hour))
	w.waiting("k", 1, 3, t0.Add(time.Hour))
	w.waiting("j", 1, 0, t0.Add(time.Hour))
	w.ended("k", 2) // the first waiter withdrew
	if !w.any(t0) {
		t.Fatal("k/3 still waits for k/1, and j/1 has a waiter: no wait counts")
	}
	w.ended("k", 3)
	w.ended("j", 2) // another claim of j's: its waiter was not told
	if !w.any(t0) {
		t.Fatal("the wait for j/1, of a waiter that did not tell its claim, no longer counts")
	}
	w.ended("j", 1)
	if w.any(t0) {
		t.Errorf("every waiter withdrew or its claim ended: a wait still counts (%d remembered)", w.n)
	}
	if w.n != 0 || len(w.waits) != 0 {
		t.Errorf("%d waits over %d keys remembered once all ended; want none", w.n, len(w.waits))
	}
}

// TestEventAwaitLongSoonAfterTheLastAnnouncement: on FerretDB, once the
// claims announced have ended, getMores of the event cursor stay short
// for othersWaitGrace after the last announcement the stream showed, and
// no longer: less than a safety poll interval (it was eight, two minutes
// at the default: a partition's members sent a getMore every 5 s for two
// minutes after any join, issue 45).
func TestEventAwaitLongSoonAfterTheLastAnnouncement(t *testing.T) {
	const safety = 20 * time.Second
	b, _, ctx, next := awaitsWatched(t, true, safety)
	follow(t, ctx, b)
	next()
	tl := tail(b)
	tl.othersWaitAt.Store(int64(b.s.cfg.mono() - time.Second))
	if got := tl.awaitTime(); got != ferretAwait {
		t.Errorf("a second after an announcement: getMore of the event cursor waits up to %v, want %v", got, ferretAwait)
	}
	tl.othersWaitAt.Store(int64(b.s.cfg.mono() - othersWaitGrace - time.Second))
	if got := tl.awaitTime(); got != safety {
		t.Errorf("%v after the last announcement, its claim ended: getMore of the event cursor waits up to %v, want %v", othersWaitGrace+time.Second, got, safety)
	}
}

// holdAndWait has b lock k, and other wait for it under wctx (its
// LockContext's outcome goes to done), once b's stream has shown the
// wait announced.
func holdAndWait(t *testing.T, ctx, wctx context.Context, b, other *testClient) (held, waiter *dsync.Mutex, done <-chan error) {
	t.Helper()
	held, err := dsync.NewMutex(b.Client, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waitWakeups(t, b)
	// The waiter's stream is live before it claims: a claim made before
	// would have its end announced anyway (its process cannot tell who
	// announced what meanwhile).
	follow(t, ctx, other)
	waiter, err = dsync.NewMutex(other.Client, "k")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- waiter.LockContext(wctx) }()
	waitAnnounced(t, ctx, b, "k", 1)
	return held, waiter, ch
}
