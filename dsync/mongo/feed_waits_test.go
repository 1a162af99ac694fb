package dsyncmongo

import (
	"testing"
	"time"

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
	if err := other.s.Publish(ctx, driver.Event{Kind: driver.Ended, Key: "k", Epoch: 1, Proc: "owner"}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != safety {
		t.Errorf("once the claim waited for ended: getMore of the event cursor waits up to %v, want %v", got, safety)
	}
}

// TestWaitsSeen: a wait counts until the claim it names ends or its
// announcement lapses; past maxWaitsSeen claims, the forgotten ones
// count until the latest of their announcements lapses.
func TestWaitsSeen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w waitsSeen
	if w.any(t0) {
		t.Fatal("no announcement seen: a wait counts")
	}
	w.waiting("k", 1, t0.Add(time.Hour))
	w.waiting("k", 2, t0.Add(time.Minute))
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
		w.waiting("many", int64(i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := len(w.until); n > maxWaitsSeen {
		t.Errorf("%d claims remembered; want at most %d", n, maxWaitsSeen)
	}
	w.ended("many", maxWaitsSeen)                          // the only one remembered
	lapse := t0.Add((maxWaitsSeen - 1) * time.Millisecond) // the latest forgotten
	if !w.any(lapse.Add(-time.Nanosecond)) {
		t.Error("the claims forgotten past the bound no longer count before their announcements lapse")
	}
	if w.any(lapse) {
		t.Error("a wait counts after every announcement lapsed")
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
	tl.othersWaitAt.Store(int64(b.s.mono() - time.Second))
	if got := tl.awaitTime(); got != ferretAwait {
		t.Errorf("a second after an announcement: getMore of the event cursor waits up to %v, want %v", got, ferretAwait)
	}
	tl.othersWaitAt.Store(int64(b.s.mono() - othersWaitGrace - time.Second))
	if got := tl.awaitTime(); got != safety {
		t.Errorf("%v after the last announcement, its claim ended: getMore of the event cursor waits up to %v, want %v", othersWaitGrace+time.Second, got, safety)
	}
}
