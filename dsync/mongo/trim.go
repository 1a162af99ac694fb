package dsyncmongo

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Trimming the events collection, on FerretDB only. MongoDB bounds a
// capped collection itself (and deletes from one only from 5.0.7 on):
// there the driver deletes nothing. FerretDB does not, and answers a
// waiting tailable cursor by re-reading the collection every 10 ms,
// decoding every event up to the last one the cursor returned, so the
// events kept cost every follower CPU a hundred times a second.
//
// A process whose follower read one of its own events deletes events
// its follower returned, at most once per trimEvery, until only the
// newest is left:
//
//   - while events flow, only beyond the newest trimKeep, and only an
//     event whose successor the follower returned trimSlack or more ago;
//   - once the follower returned no event for trimQuiet, every event but
//     the newest.
//
// A tailable cursor on FerretDB fails when the last event it returned is
// deleted (each getMore finds its place again by reading the collection
// up to that event), and its process then reopens it: a getMore, an
// insert of an "open" event, a find, and a look at every key it waits
// for, with events of its own that make others trim. Deleting only what
// every cursor that keeps up has left behind keeps that from feeding on
// itself: an event goes only once the event after it has been there for
// trimSlack (a cursor that keeps up returns an event within about 20 ms
// of its insert), and only when more than trimKeep events are kept, or
// when the stream has been quiet for trimQuiet (a cursor whose last
// event is not the newest after that lags by seconds). Deleting the
// previous events as soon as a new one came, as an earlier trimmer did,
// failed every cursor that had not yet returned the new one: with 64
// waiting processes on two cores, a storm of reopens that cost each
// waiter ten commands a second (bench/RESULTS.md, Scale).
//
// What is trimmed is missed only by a cursor that lags that far, or
// opens later (it reopens a second or more after a failure): a waiter it
// should have woken looks again within the safety poll interval, and a
// waiter whose own stream reopens announces itself again
// (driver.Feed.Replay: an event is deleted no sooner than trimSlack after
// the follower that deletes it returned it). The newest event is never
// deleted.
//
// Deleting by _id what the cursor returned, rather than by the "at" of
// events, makes trimming independent of the senders' clocks (and of how
// late an insert lands).
const (
	trimSlack = 250 * time.Millisecond
	trimEvery = 250 * time.Millisecond
	// trimKeep: each event kept costs every waiting cursor a decode per
	// poll; 16 slowed handoffs among 16 waiting processes, 4 did not
	// (bench/scale-notes.md).
	trimKeep  = 4
	trimQuiet = 2 * time.Second
	// maxSeen bounds the events remembered for trimming.
	maxSeen = 4096
)

// A seenEvent is an event the cursor returned, and when (local monotonic).
type seenEvent struct {
	id bson.ObjectID
	at time.Duration
}

// A trimmer deletes the events a follower read, in a goroutine of its
// own, while that follower's cursor is open.
type trimmer struct {
	s      *lockStore
	asked  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	seen []seenEvent // oldest first
}

func newTrimmer(s *lockStore) *trimmer {
	ctx, cancel := context.WithCancel(context.Background())
	t := &trimmer{s: s, asked: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.run(ctx)
	}()
	return t
}

func (t *trimmer) stop() {
	t.cancel()
	<-t.done
}

// note records an event the cursor returned; one of ours asks for a trim.
func (t *trimmer) note(id bson.ObjectID, ours bool) {
	t.mu.Lock()
	if len(t.seen) >= maxSeen {
		t.seen = append(t.seen[:0], t.seen[len(t.seen)/2:]...)
	}
	t.seen = append(t.seen, seenEvent{id: id, at: t.s.mono()})
	t.mu.Unlock()
	if ours {
		select {
		case t.asked <- struct{}{}:
		default: // already asked
		}
	}
}

// run deletes old events until ctx ends: asked, it deletes what take
// allows as soon as it allows it, at least trimEvery apart, until only
// the newest event is left.
func (t *trimmer) run(ctx context.Context) {
	var last time.Duration
	first := true
	for {
		select {
		case <-t.asked:
		case <-ctx.Done():
			return
		}
		for {
			t.mu.Lock()
			due := t.due()
			t.mu.Unlock()
			if due == 0 {
				break // nothing but the newest event
			}
			if !first {
				due = max(due, last+trimEvery)
			}
			if d := due - t.s.mono(); d > 0 {
				timer := time.NewTimer(d)
				select {
				case <-timer.C:
				case <-ctx.Done():
					timer.Stop()
					return
				}
			}
			if ids := t.take(t.s.mono()); len(ids) > 0 {
				t.delete(ctx, ids)
			}
			last, first = t.s.mono(), false
		}
	}
}

// due is when take will next return an event (local monotonic), or 0 if
// only the newest event is kept. t.mu must be held.
func (t *trimmer) due() time.Duration {
	n := len(t.seen)
	if n <= 1 {
		return 0
	}
	at := t.seen[n-1].at + trimQuiet
	if n > trimKeep {
		at = min(at, t.seen[1].at+trimSlack)
	}
	return at
}

// take removes from seen, and returns, the events that may be deleted at
// now: all but the newest once the stream has been quiet for trimQuiet;
// otherwise the oldest, while more than trimKeep are kept, each only if
// the event after it was returned trimSlack or more before now.
func (t *trimmer) take(now time.Duration) []bson.ObjectID {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := len(t.seen)
	quiet := kept > 1 && now-t.seen[kept-1].at >= trimQuiet
	n := 0
	for n < kept-1 && (quiet || kept-n > trimKeep && now-t.seen[n+1].at >= trimSlack) {
		n++
	}
	ids := make([]bson.ObjectID, n)
	for i := range n {
		ids[i] = t.seen[i].id
	}
	t.seen = append(t.seen[:0], t.seen[n:]...)
	return ids
}

// delete deletes the events ids. Best effort.
func (t *trimmer) delete(ctx context.Context, ids []bson.ObjectID) {
	err := t.s.write(ctx, "trim events", func(ctx context.Context) error {
		_, err := t.s.events.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		return err
	})
	if err != nil {
		t.s.cfg.logger.Debug("dsyncmongo: trimming events failed", slog.Any("err", err))
	}
}
