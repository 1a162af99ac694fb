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
// Each process deletes its own events (those it published, and its
// follower's "open" events), once its follower returned them, at most
// once per trimEvery, never its follower's newest:
//
//   - while events flow, only beyond the newest trimKeep, and only an
//     event whose successor the follower returned trimSlack or more ago;
//   - once the follower returned no event for trimQuiet, every event but
//     the newest.
//
// So each event is deleted once, by the process that sent it. Every
// process whose event its follower had returned used to delete every
// event it had returned: the same events, deleted by as many processes
// as had sent one lately, so that with many waiting processes most
// deletes found nothing; yet each was a write, which FerretDB's SQLite
// backend serializes with every other write, the sessions' renewals
// among them (bench/scale-notes.md). A process does not learn that
// another deleted an event, so it cannot delete others' events without
// deleting them again. Events that their sender did not delete (it
// stopped, or its follower lags far behind) are deleted when a process
// that sends an end reads the collection (Publish): those sent more than
// leftoverAge before, but the last; and when a process opens its stream,
// from the history it reads first (leftovers): a process that locks once
// and exits (a job run from cron) leaves its "open" event behind, the
// newest, and the next one deletes it, so that such events do not pile
// up however many processes ran.
//
// A tailable cursor on FerretDB fails when the last event it returned is
// deleted (each getMore finds its place again by reading the collection
// up to that event), and its process then reopens it (feed_tail.go).
// Deleting only what every cursor that keeps up has left behind keeps
// that rare: an event goes only once the event after it has been there
// for trimSlack (a cursor that keeps up returns an event within about
// 20 ms of its insert), and only when more than trimKeep events come
// after it, or when the stream has been quiet for trimQuiet (a cursor
// whose last event is not the newest after that lags by seconds).
//
// What is trimmed is missed only by a cursor that lags that far, or
// opens later (it reopens a second or more after a failure): a waiter it
// should have woken looks again within the safety poll interval, and a
// waiter whose own stream reopens announces itself again
// (driver.Feed.Replay: an event is deleted no sooner than trimSlack after
// the follower that deletes it returned it). Since no process deletes
// the newest event its follower returned, an event is deleted only while
// a later one is in the collection (the latest of all is never
// deleted), which the check after each insert relies on (Publish).
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
	// leftoverAge: how long after it was sent an event counts as left
	// over by its sender (which deletes its own within trimQuiet or so of
	// the stream's going quiet, trimEvery apart at worst, unless it lags).
	leftoverAge = 10 * time.Second
	// maxSeen bounds the events remembered for trimming.
	maxSeen = 4096
)

// A seenEvent is an event the cursor returned, when (local monotonic),
// and whether this process sent it.
type seenEvent struct {
	id   bson.ObjectID
	at   time.Duration
	ours bool
}

// A trimmer deletes the events a follower read, in a goroutine of its
// own, while that follower's cursor is open.
type trimmer struct {
	f      *feed
	asked  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	seen   []seenEvent // oldest first
	seenID map[bson.ObjectID]struct{}
	// left: events their senders left, to delete from leftAt on (local
	// monotonic; 0: none pending).
	left   []bson.ObjectID
	leftAt time.Duration
}

func newTrimmer(f *feed) *trimmer {
	ctx, cancel := context.WithCancel(context.Background())
	t := &trimmer{f: f, asked: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
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

// note records an event the cursor returned, ours if this process sent
// it, and has the trimmer look again at what it may delete and when.
//
// An event the cursor returned before is not recorded again: FerretDB's
// cursor returns an event again when a getMore's time runs out while it
// reads its way back to its place (it stops short, on an older event).
// Recorded again, the newest event seemed to have a successor (itself),
// was deleted, and every cursor sitting on it failed.
func (t *trimmer) note(id bson.ObjectID, ours bool) {
	t.mu.Lock()
	if _, ok := t.seenID[id]; ok {
		t.mu.Unlock()
		return
	}
	if t.seenID == nil {
		t.seenID = make(map[bson.ObjectID]struct{})
	}
	if len(t.seen) >= maxSeen {
		t.forget(len(t.seen) / 2)
	}
	t.seen = append(t.seen, seenEvent{id: id, at: t.f.cfg.mono(), ours: ours})
	t.seenID[id] = struct{}{}
	t.mu.Unlock()
	select {
	case t.asked <- struct{}{}:
	default: // already asked
	}
}

// run deletes old events until ctx ends: what take allows, as soon as it
// allows it (due), at least trimEvery apart, and the leftovers when they
// are due; when ctx ends, the leftovers not deleted yet.
func (t *trimmer) run(ctx context.Context) {
	defer t.deleteLeftovers()
	var last time.Duration
	first := true
	for {
		due := t.nextDue()
		var timer *time.Timer
		var fire <-chan time.Time
		if due != 0 {
			if !first {
				due = max(due, last+trimEvery)
			}
			d := due - t.f.cfg.mono()
			if d <= 0 {
				t.trimNow(ctx)
				last, first = t.f.cfg.mono(), false
				continue
			}
			timer = time.NewTimer(d)
			fire = timer.C
		}
		select {
		case <-t.asked: // events came: due may have changed
		case <-fire:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// nextDue is when the next deletion is due (0: none): the earlier of
// what take allows and the leftovers'.
func (t *trimmer) nextDue() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	due := t.due()
	if t.leftAt != 0 && (due == 0 || t.leftAt < due) {
		due = t.leftAt
	}
	return due
}

// trimNow deletes what take allows now, and the leftovers that are due.
func (t *trimmer) trimNow(ctx context.Context) {
	now := t.f.cfg.mono()
	ids := t.take(now)
	t.mu.Lock()
	ids = append(ids, t.takeLeftovers(now, false)...)
	t.mu.Unlock()
	if len(ids) > 0 {
		t.f.deleteEvents(ctx, ids)
	}
}

// deleteLeftovers deletes, on the way out, the leftovers not deleted
// yet, within the cleaning's bound.
func (t *trimmer) deleteLeftovers() {
	t.mu.Lock()
	ids := t.takeLeftovers(0, true)
	t.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	dctx, cancel := t.f.writer.cleanupContext(closeCleanTime)
	defer cancel()
	if dctx.Err() == nil {
		t.f.deleteEvents(dctx, ids)
	}
}

// eligibleAt is when the event at i (not the newest) may be deleted, as
// far as the events after it tell: once the stream has been quiet for
// trimQuiet, or, if more than trimKeep events come after it, trimSlack
// after the next one came. It never decreases with i. t.mu must be held.
func (t *trimmer) eligibleAt(i int) time.Duration {
	kept := len(t.seen)
	at := t.seen[kept-1].at + trimQuiet
	if kept-i > trimKeep {
		at = min(at, t.seen[i+1].at+trimSlack)
	}
	return at
}

// due is when take will next return an event (local monotonic), or 0 if
// it will not before another event comes: when the first of ours that is
// not the newest may be deleted. t.mu must be held.
func (t *trimmer) due() time.Duration {
	for i := 0; i < len(t.seen)-1; i++ {
		if t.seen[i].ours {
			return t.eligibleAt(i)
		}
	}
	return 0
}

// take removes from seen, and returns, the events of ours to delete at
// now, among those that may be deleted: all but the newest once the
// stream has been quiet for trimQuiet; otherwise the oldest, while more
// than trimKeep come after them, each only if the event after it was
// returned trimSlack or more before now. Others' events among those are
// forgotten (their senders delete them).
func (t *trimmer) take(now time.Duration) []bson.ObjectID {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := len(t.seen)
	if kept == 0 {
		return nil
	}
	quiet := now-t.seen[kept-1].at >= trimQuiet
	n := 0
	for n < kept-1 && (quiet || kept-n > trimKeep && now-t.seen[n+1].at >= trimSlack) {
		n++
	}
	var ids []bson.ObjectID
	for _, e := range t.seen[:n] {
		if e.ours {
			ids = append(ids, e.id)
		}
	}
	t.forget(n)
	return ids
}

// forget drops the oldest n events from seen. t.mu must be held.
func (t *trimmer) forget(n int) {
	for _, e := range t.seen[:n] {
		delete(t.seenID, e.id)
	}
	t.seen = append(t.seen[:0], t.seen[n:]...)
}

// leftovers collects, from events read in the collection's order, the
// events their senders left: those sent leftoverAge or more before a
// time, but the last of the events read, on which the cursors that keep
// up may sit (deleting it would fail them). Two reads collect them: the
// history a new stream reads before its "open" event (dropLeftovers
// deletes them), so that processes that each lock once and exit (a job
// run from cron) leave no more than one such event behind, however many
// ran; and Publish's read after an end (landedLate). Each event kept
// costs every later stream's first read, and on FerretDB every waiting
// cursor a decode a hundred times a second.
type leftovers struct {
	ids  []bson.ObjectID
	last bson.ObjectID // an aged event, deleted only if another follows
}

// note records the next event read, id, sent at (by its sender's
// estimate of the server's time): a leftover if it was sent leftoverAge
// before now and another event follows it, unless keep.
func (l *leftovers) note(id bson.ObjectID, at, now time.Time, keep bool) {
	if !l.last.IsZero() {
		l.ids = append(l.ids, l.last) // another event follows it
		l.last = bson.ObjectID{}
	}
	if !keep && at.Add(leftoverAge).Before(now) {
		l.last = id
	}
}

// take returns the events to delete: the aged ones another event
// followed.
func (l *leftovers) take() []bson.ObjectID {
	ids := l.ids
	l.ids, l.last = nil, bson.ObjectID{}
	return ids
}

// dropLeftovers has the trimmer delete ids, events their senders left,
// trimSlack from now (so that the streams that keep up, and those that
// opened beside ours, have moved past them), or at once when it stops: a
// process that exits at once still deletes what its stream found, in a
// write that Close waits for up to closeCleanTime.
func (t *trimmer) dropLeftovers(ids []bson.ObjectID) {
	if len(ids) == 0 {
		return
	}
	t.mu.Lock()
	t.left = append(t.left, ids...)
	if t.leftAt == 0 {
		t.leftAt = t.f.cfg.mono() + trimSlack
	}
	t.mu.Unlock()
	select {
	case t.asked <- struct{}{}:
	default: // already asked
	}
}

// takeLeftovers returns the leftovers to delete at now (all of them if
// force). t.mu must be held.
func (t *trimmer) takeLeftovers(now time.Duration, force bool) []bson.ObjectID {
	if len(t.left) == 0 || !force && now < t.leftAt {
		return nil
	}
	ids := t.left
	t.left, t.leftAt = nil, 0
	return ids
}

// deleteEvents deletes the events ids. Best effort.
func (f *feed) deleteEvents(ctx context.Context, ids []bson.ObjectID) {
	err := f.writer.write(ctx, "trim events", func(ctx context.Context) error {
		_, err := f.events.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		return err
	})
	if err != nil {
		f.cfg.logger.Debug("dsyncmongo: trimming events failed", slog.Any("err", err))
	}
}
