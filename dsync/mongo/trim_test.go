package dsyncmongo

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/mongotest"
)

// seenAt is a trimmer that returned one event at each of ats.
func seenAt(ats ...time.Duration) *trimmer {
	t := &trimmer{}
	for _, at := range ats {
		t.seen = append(t.seen, seenEvent{id: bson.NewObjectID(), at: at})
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
		name string
		seen []time.Duration
		now  time.Duration
		want int // events taken, oldest first
	}{
		{"the newest alone stays", []time.Duration{0}, time.Hour, 0},
		// An old event stays while cursors may still sit on it: the one
		// after it has just come (the trimmer before deleted it here).
		{"a new event after a quiet stream", []time.Duration{0, 10 * time.Second}, 10*time.Second + 300*ms, 0},
		{"a second later", []time.Duration{0, 10 * time.Second}, 11 * time.Second, 0},
		{"quiet again", []time.Duration{0, 10 * time.Second}, 12 * time.Second, 1},
		{"quiet: all but the newest", many(40, ms), 40*ms + trimQuiet, 39},
		{"busy: the oldest beyond trimKeep", many(trimKeep+4, 10*ms), time.Duration(trimKeep+3)*10*ms + time.Second, 4},
		{"busy, but their successors are young", many(20, ms), 100 * ms, 0},
		{"busy: only those whose successor is old enough", many(20, 100*ms), 550 * ms, 3},
		{"busy: fewer than trimKeep", many(trimKeep, 100*ms), 1900 * ms, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := seenAt(tt.seen...)
			want := append([]seenEvent(nil), tr.seen[:tt.want]...)
			got := tr.take(tt.now)
			if len(got) != tt.want {
				t.Fatalf("took %d events, want %d", len(got), tt.want)
			}
			for i := range got {
				if got[i] != want[i].id {
					t.Fatalf("took event %v at %d, want the oldest first", got[i], i)
				}
			}
			if len(tr.seen) != len(tt.seen)-tt.want {
				t.Fatalf("%d events remembered after, want %d", len(tr.seen), len(tt.seen)-tt.want)
			}
		})
	}
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
}

// A cursor that has not yet returned a new event keeps working: the
// trimmer no longer deletes the event it sits on as soon as a new one
// comes (it did, and each such cursor failed and reopened).
func TestTrimSparesACursorThatLags(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("trimming is FerretDB's alone")
	}
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, WithWakeups(true), asFerretDB(true))
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
	read := 0
	for cur.TryNext(ctx) {
		read++
	}
	if err := cur.Err(); err != nil || read == 0 {
		t.Fatalf("the lagging cursor read %d events: %v", read, err)
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
	if !cur.TryNext(ctx) {
		t.Fatalf("the lagging cursor failed instead of returning the new event: %v", cur.Err())
	}
	var e eventDoc
	if err := cur.Decode(&e); err != nil || e.Epoch != 2 {
		t.Fatalf("the lagging cursor returned %+v (%v), want the event of epoch 2", e, err)
	}
}
