package dsyncmongo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// seenAt is a trimmer that returned one event of ours at each of ats.
func seenAt(ats ...time.Duration) *trimmer {
	t := &trimmer{}
	for _, at := range ats {
		t.seen = append(t.seen, seenEvent{id: bson.NewObjectID(), at: at, ours: true})
	}
	return t
}

// theirs marks the events at is as another process's.
func (t *trimmer) theirs(is ...int) *trimmer {
	for _, i := range is {
		t.seen[i].ours = false
	}
	return t
}

func TestTrimTakes(t *testing.T) {
	ms := time.Millisecond
	many := func(n int, step time.Duration) []time.Duration {
		var ats []time.Duration
		for i := range n {
			ats = append(ats, time.Duration(i)*step)
		}
		return ats
	}
	tests := []struct {
		name   string
		tr     *trimmer
		now    time.Duration
		want   []int // events taken, by index
		forget []int // others' events forgotten, by index
	}{
		{"the newest alone stays", seenAt(0), time.Hour, nil, nil},
		// An old event stays while cursors may still sit on it: the one
		// after it has just come (the trimmer before deleted it here).
		{"a new event after a quiet stream", seenAt(0, 10*time.Second), 10*time.Second + 300*ms, nil, nil},
		{"a second later", seenAt(0, 10*time.Second), 11 * time.Second, nil, nil},
		{"quiet again", seenAt(0, 10*time.Second), 12 * time.Second, []int{0}, nil},
		{"quiet: all but the newest", seenAt(many(40, ms)...), 40*ms + trimQuiet, seq(0, 39), nil},
		{"busy: the oldest beyond trimKeep", seenAt(many(trimKeep+4, 10*ms)...), time.Duration(trimKeep+3)*10*ms + time.Second, seq(0, 4), nil},
		{"busy, but their successors are young", seenAt(many(20, ms)...), 100 * ms, nil, nil},
		{"busy: only those whose successor is old enough", seenAt(many(20, 100*ms)...), 550 * ms, seq(0, 3), nil},
		{"busy: fewer than trimKeep", seenAt(many(trimKeep, 100*ms)...), 1900 * ms, nil, nil},
		// Each process deletes its own events: the others' are theirs to
		// delete (every process whose event its follower returned used to
		// delete every event, the same ones).
		{"others' events are not ours to delete", seenAt(many(40, ms)...).theirs(1, 3, 5), 40*ms + trimQuiet, append([]int{0, 2, 4}, seq(6, 39)...), []int{1, 3, 5}},
		{"ours go while another's is the newest", seenAt(many(trimKeep+4, 10*ms)...).theirs(trimKeep + 3), time.Second, seq(0, 4), nil},
		{"only others' events: nothing", seenAt(many(10, ms)...).theirs(seq(0, 10)...), trimQuiet + time.Second, nil, seq(0, 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]seenEvent(nil), tt.tr.seen...)
			got := tt.tr.take(tt.now)
			if len(got) != len(tt.want) {
				t.Fatalf("took %d events, want %d", len(got), len(tt.want))
			}
			for i, j := range tt.want {
				if got[i] != before[j].id {
					t.Fatalf("took event %v at %d, want event %d (the oldest first)", got[i], i, j)
				}
			}
			if n, want := len(tt.tr.seen), len(before)-len(tt.want)-len(tt.forget); n != want {
				t.Fatalf("%d events remembered after, want %d", n, want)
			}
		})
	}
}

// seq is from, from+1, ..., to-1.
func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestTrimDue(t *testing.T) {
	ms := time.Millisecond
	if d := seenAt(5 * ms).due(); d != 0 {
		t.Errorf("due with the newest alone: %v, want 0 (nothing to do)", d)
	}
	if d, want := seenAt(0, 10*time.Second).due(), 10*time.Second+trimQuiet; d != want {
		t.Errorf("due with two events: %v, want the quiet time %v", d, want)
	}
	var ats []time.Duration
	for i := range trimKeep + 1 {
		ats = append(ats, time.Duration(i)*ms)
	}
	if d, want := seenAt(ats...).due(), ms+trimSlack; d != want {
		t.Errorf("due beyond trimKeep: %v, want %v", d, want)
	}
	if d := seenAt(ats...).theirs(seq(0, trimKeep)...).due(); d != 0 {
		t.Errorf("due with only others' events before our newest: %v, want 0 (their senders delete them)", d)
	}
	if d, want := seenAt(append(ats, 10*ms)...).theirs(0).due(), 2*ms+trimSlack; d != want {
		t.Errorf("due with another's event first: %v, want when ours after it may go, %v", d, want)
	}
	if d, want := seenAt(0, time.Second, 2*time.Second).theirs(0, 2).due(), 2*time.Second+trimQuiet; d != want {
		t.Errorf("due with ours between others': %v, want the quiet time %v", d, want)
	}
}

// A cursor that has not yet returned a new event keeps working: the
// trimmer no longer deletes the event it sits on as soon as a new one
// comes (it did, and each such cursor failed and reopened).
func TestTrimSparesACursorThatLags(t *testing.T) {
	t.Parallel()
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("trimming is FerretDB's alone")
	}
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(true))
	ctx := testCtx(t, 30*time.Second)
	follow(t, ctx, b)
	announce(t, ctx, b, "us", "k", 1)

	// Another follower reads every event there is, then lags.
	events := db.Collection(DefaultCollection + eventsSuffix)
	cur, err := events.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(context.Background())
	cur.SetMaxAwaitTime(100 * time.Millisecond)
	// It reads until it has returned our announcement: a getMore that
	// found nothing within its await says nothing on a loaded machine,
	// where FerretDB's query may take longer than the await (the cursor
	// then returned epoch 1 at the end, in place of epoch 2). After such
	// an empty getMore FerretDB's cursor may also return an event again
	// (so with an await of 1 ms): the follower drops those (passed), and
	// so does this reader, by _id.
	read := map[bson.ObjectID]bool{}
	for seen := false; !seen; {
		if !cur.TryNext(ctx) {
			if err := cur.Err(); err != nil || ctx.Err() != nil {
				t.Fatalf("the lagging cursor did not return our announcement: %v, %v", err, ctx.Err())
			}
			continue
		}
		var e eventDoc
		if err := cur.Decode(&e); err != nil {
			t.Fatal(err)
		}
		read[e.ID] = true
		seen = e.Kind == eventWait && e.Epoch == 1
	}
	for cur.TryNext(ctx) { // and whatever followed it
		var e eventDoc
		if err := cur.Decode(&e); err != nil {
			t.Fatal(err)
		}
		read[e.ID] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatalf("the lagging cursor failed: %v", err)
	}

	// Its last event ages; then a new event comes, and our follower (which
	// returned the old one long ago) reads it and trims.
	time.Sleep(2 * trimSlack)
	base := tail(b).ownSeen.Load()
	announce(t, ctx, b, "us", "k", 2)
	for tail(b).ownSeen.Load() == base {
		select {
		case <-ctx.Done():
			t.Fatal("our follower did not see our event")
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(2 * trimSlack) // past when the old trimmer deleted the old event
	cur.SetMaxAwaitTime(time.Second)
	var e eventDoc
	for again := true; again; again = read[e.ID] {
		if !cur.TryNext(ctx) {
			t.Fatalf("the lagging cursor failed instead of returning the new event: %v", cur.Err())
		}
		if err := cur.Decode(&e); err != nil {
			t.Fatal(err)
		}
	}
	if e.Epoch != 2 {
		t.Fatalf("the lagging cursor returned %+v, want the event of epoch 2", e)
	}
}

// TestEachEventTrimmedByItsSender: on FerretDB each process deletes the
// events it sent (its announcements, its follower's "open" events), and
// no other's. Every process whose event its follower returned used to
// delete every event returned: the same events, deleted by as many
// processes as had sent one, most deletes finding nothing, each a write
// that FerretDB's SQLite backend serializes with all the others.
func TestEachEventTrimmedByItsSender(t *testing.T) {
	t.Parallel()
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("trimming is FerretDB's alone")
	}
	const n = 3
	var mu sync.Mutex
	deletedBy := map[bson.ObjectID]map[int]bool{}
	monitor := func(p int) *options.ClientOptions {
		return options.Client().SetMonitor(&event.CommandMonitor{
			Started: func(_ context.Context, e *event.CommandStartedEvent) {
				if coll, _ := e.Command.Lookup("delete").StringValueOK(); coll != DefaultCollection+eventsSuffix {
					return
				}
				in, err := e.Command.LookupErr("deletes", "0", "q", "_id", "$in")
				if err != nil {
					t.Errorf("a delete of events not by _id: %v", e.Command)
					return
				}
				vals, _ := in.Array().Values()
				mu.Lock()
				defer mu.Unlock()
				for _, v := range vals {
					id := v.ObjectID()
					if deletedBy[id] == nil {
						deletedBy[id] = map[int]bool{}
					}
					deletedBy[id][p] = true
				}
			},
		})
	}
	db := mongotest.NewDatabase(t, monitor(0))
	ctx := testCtx(t, time.Minute)
	bs := []*testClient{newBackend(t, db, dsync.ClientWithWakeups(true), asFerretDB(true))}
	for p := 1; p < n; p++ {
		bs = append(bs, newBackend(t, mongotest.SameDatabase(t, db, monitor(p)), dsync.ClientWithWakeups(true), asFerretDB(true)))
	}
	for _, b := range bs {
		follow(t, ctx, b)
	}
	// Each sends events in turn, so that each follower returns events of
	// its own among the others'.
	epoch := uint64(0)
	for range 3 {
		for p, b := range bs {
			epoch++
			announce(t, ctx, b, fmt.Sprintf("p%d", p), "k", epoch)
		}
	}
	events := db.Collection(DefaultCollection + eventsSuffix)
	for {
		left, err := events.CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if left == 1 {
			break // all but the newest: trimmed
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d events left, want the newest alone", left)
		case <-time.After(50 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id, ps := range deletedBy {
		if len(ps) > 1 {
			t.Errorf("event %v deleted by processes %v, want by its sender alone", id, ps)
		}
	}
}

// fixedClock is a clockcheck.Clock whose monotonic time a test sets.
type fixedClock struct{ mono time.Duration }

func (c *fixedClock) Wall() time.Time          { return time.Unix(0, 0).Add(c.mono) }
func (c *fixedClock) Monotonic() time.Duration { return c.mono }

// TestTrimIgnoresAnEventReturnedAgain: FerretDB's cursor returns an event
// again when a getMore's time runs out while it reads its way back to its
// place. Recorded twice, the newest event (ours) seemed to have a
// successor, itself, and was deleted once the stream was quiet: every
// cursor sitting on it failed.
func TestTrimIgnoresAnEventReturnedAgain(t *testing.T) {
	clk := &fixedClock{}
	tr := &trimmer{f: &feed{cfg: &config{clock: clk}}, asked: make(chan struct{}, 1)}
	older, newest := bson.NewObjectID(), bson.NewObjectID()
	tr.note(older, false)
	tr.note(newest, true)
	clk.mono = 10 * time.Second
	tr.note(newest, true) // returned again
	clk.mono += 2 * trimQuiet
	for _, id := range tr.take(clk.mono) {
		if id == newest {
			t.Fatal("the newest event was deleted: it was returned twice, and the first counted as an older one")
		}
	}
}
