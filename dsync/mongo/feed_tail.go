package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/errtext"
)

// The follower of the wake-up stream: one goroutine per store that opens
// the events' tailable cursor, passes events on, and reopens the cursor
// when it fails (quickly, or after going down).

// A tailer follows the events collection for one handler, in one
// goroutine, until the store is closed.
type tailer struct {
	f      *feed
	h      driver.FeedHandler
	cancel context.CancelFunc
	done   chan struct{}

	healthy atomic.Bool  // the cursor is open and caught up (tests)
	cursor  atomic.Int64 // its id while healthy, for tests that kill it
	ownSeen atomic.Int64 // events of this store the cursor returned (tests)
	// othersWaitAt: when the stream last showed another process announce
	// that it waits (local monotonic; 0: never); othersWait: the claims
	// announced, until they end or the announcements lapse
	// (feed_waits.go).
	othersWaitAt atomic.Int64
	othersWait   waitsSeen
	gen          atomic.Uint64 // the times the handler heard it turned live
	liveAt       time.Duration // when it last turned live, told or not (local monotonic)
	// passed: the events the stream returned lately, so that a cursor
	// reopened does not pass them again.
	passed recentIDs
	// last: the last event the stream returned.
	last bson.ObjectID
	// openProc: the sender named in our "open" events, which are ours to
	// delete (trim.go).
	openProc string

	trim *trimmer // FerretDB only; nil elsewhere

	pause pauseState // feed_pause.go
}

// stop stops the follower and waits for it. It may be called more than
// once.
func (t *tailer) stop() {
	t.cancel()
	<-t.done
}

func (t *tailer) run(ctx context.Context) {
	defer close(t.done)
	backoff := time.Second
	var q quickReopens
	for {
		fctx, ok := t.pause.await(ctx)
		if !ok {
			return
		}
		wasLive, err := t.follow(fctx, q.on)
		paused := fctx.Err() != nil
		t.pause.done()
		t.healthy.Store(false)
		t.cursor.Store(0)
		if wasLive {
			backoff = time.Second
		}
		if ctx.Err() != nil {
			return
		}
		if paused {
			// Paused: once resumed, the stream opens again from scratch
			// (and says Live), as after a Down.
			q, backoff = quickReopens{}, time.Second
			continue
		}
		var ne *noEventsError
		if errors.As(err, &ne) {
			t.h.Down(fmt.Errorf("dsyncmongo: collection %s: %w", t.f.cfg.collection+eventsSuffix, err), true)
			return
		}
		if q.next(wasLive, t.f.cfg.mono()-t.liveAt) {
			if !sleepCtx(ctx, q.pause) {
				return
			}
			continue
		}
		t.h.Down(errtext.Tidy(fmt.Errorf("dsyncmongo: the wake-up event stream failed (reopening in about %v): %w", backoff, err)), false)
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, maxReopenBackoff)
	}
}

// quickReopens decides how a failed stream is reopened. A live stream that
// failed is reopened quietly (see follow), and so is one whose quiet
// reopening failed, up to quickTries times in a row (a loaded server fails
// some); then, and for a stream that never was live, it goes down. Quick
// reopens insert nothing, so they never make other streams fail: one
// that keeps failing is reopened every quickMax at worst.
type quickReopens struct {
	on    bool          // the next follow is quick
	pause time.Duration // before the next quick reopen
	fails int           // quick reopens in a row that failed before they were live
}

// next judges a follow that ended (wasLive: its stream had turned live,
// liveFor ago): it reports whether the next is a quick reopen, after
// q.pause.
func (q *quickReopens) next(wasLive bool, liveFor time.Duration) bool {
	switch {
	case wasLive:
		q.fails = 0
	case q.on:
		q.fails++
	}
	q.on = (wasLive || q.on) && q.fails < quickTries
	if !q.on {
		return false
	}
	if wasLive && liveFor >= quickCalm {
		q.pause = 0
	} else {
		q.pause = min(max(2*q.pause, quickFirst), quickMax)
	}
	return true
}

// sleepCtx sleeps for about d (jittered; not at all for 0), and reports
// false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(jitter(d))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// follow opens the cursor and passes events on until it fails or ctx
// ends. It reports whether the stream was live.
//
// It first makes sure the capped collection exists and inserts an "open"
// event: the stream is live once the cursor reaches it. A quick follow,
// after a live stream failed, does neither: the collection exists and
// holds an event (the newest is never trimmed), and the stream is live
// once the cursor's first batch came back, since every event inserted
// after the find (or too recently to be trimmed before it: Replay) comes
// after that batch. It inserts nothing, so that a cursor failure does not
// make events for the others to read and trim: on FerretDB, where a trim
// fails every cursor that sits on an event it deletes, reopening with an
// event of its own fed a storm of reopens. Events the stream passed
// before are not passed again, and the handler hears of the stream's
// turning live again only if events may have gone unseen.
func (t *tailer) follow(ctx context.Context, quick bool) (live bool, err error) {
	cur, open, est, err := t.open(ctx, quick)
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := t.f.writer.cleanupContext(time.Second)
		defer cancel()
		_ = cur.Close(cctx)
	}()
	if quick && (cur.RemainingBatchLength() == 0 || cur.ID() == 0) {
		return false, errors.New("dsyncmongo: the events collection is empty or its cursor closed at once")
	}
	cur.SetBatchSize(256) // the history before "open" is read in bulk
	if t.f.platform.isFerret() {
		t.trim = newTrimmer(t.f)
		defer t.trim.stop()
	}
	p := &streamPass{t: t, cur: cur, quick: quick, open: open, now: func() time.Time { return est.Now().Earliest }}
	for t.next(ctx, cur, p.caughtUp) {
		var e eventDoc
		if err := cur.Decode(&e); err != nil {
			continue
		}
		p.see(e)
	}
	if err := cur.Err(); err != nil {
		return p.live, err
	}
	return p.live, errors.New("dsyncmongo: event cursor closed by the server")
}

// open prepares the store and opens the events' tailable cursor: for a
// follow that is not quick, after making sure the capped collection
// exists and inserting the "open" event the stream turns live at. It
// returns the cursor, that event, and the server-time estimate.
func (t *tailer) open(ctx context.Context, quick bool) (*mongo.Cursor, eventDoc, *clockcheck.Estimator, error) {
	f := t.f
	est, err := f.prepare(ctx)
	if err != nil {
		return nil, eventDoc{}, nil, err
	}
	var open eventDoc
	if !quick {
		if err := f.createEvents(ctx); err != nil {
			return nil, eventDoc{}, nil, err
		}
		open = eventDoc{ID: bson.NewObjectID(), Kind: eventOpen, Proc: t.openProc, At: est.Now().Earliest}
		if err := f.insertEvent(ctx, open); err != nil {
			return nil, eventDoc{}, nil, err
		}
	}
	// Batch size 1: the first batch must be full for FerretDB to keep a
	// tailable cursor open; our "open" event is there at least (the
	// newest event, for a quick follow). How long each getMore waits is
	// set before each one (awaitTime).
	cur, err := f.events.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetBatchSize(1))
	if err != nil {
		if unsupported(err) {
			return nil, eventDoc{}, nil, &noEventsError{"the server refuses a tailable cursor on the events collection", err}
		}
		return nil, eventDoc{}, nil, err
	}
	return cur, open, est, nil
}

// turnLive marks the stream live, on cur, and, if tell, reports it to
// the handler; it returns true.
func (t *tailer) turnLive(cur *mongo.Cursor, tell bool) bool {
	t.liveAt = t.f.cfg.mono()
	t.cursor.Store(cur.ID())
	t.healthy.Store(true)
	if tell {
		t.h.Live(t.gen.Add(1))
	}
	return true
}

// pass hands another process's event to the handler. History read before
// our "open" event counts as well: announcements made before we opened
// still hold.
func (t *tailer) pass(e eventDoc, now time.Time) {
	if e.Key == "" || e.Epoch <= 0 {
		return
	}
	ev := driver.Event{Key: e.Key, Epoch: uint64(e.Epoch), Proc: e.Proc}
	switch e.Kind {
	case eventWait:
		ev.Kind, ev.Until, ev.Own = driver.Waiting, e.Until, uint64(max(e.Own, 0))
		if e.Until.After(now) {
			t.othersWaitAt.Store(int64(t.f.cfg.mono()))
			t.othersWait.waiting(e.Key, e.Epoch, max(e.Own, 0), e.Until)
		}
	case eventEnded:
		ev.Kind = driver.Ended
		t.othersWait.ended(e.Key, e.Epoch)
	default:
		return
	}
	t.h.Event(ev)
}

// next waits for the cursor's next event, one getMore at a time: each
// waits up to awaitTime on the server (read again before each, as other
// processes start or stop waiting), under a deadline of its own a little
// past that wait. Cursor.Next would chain getMores under one deadline:
// a client's operation timeout (options.Client().SetTimeout) when the
// context has none, which the driver refuses as shorter than the wait.
func (t *tailer) next(ctx context.Context, cur *mongo.Cursor, caughtUp func()) bool {
	for {
		await := t.awaitTime()
		cur.SetMaxAwaitTime(await)
		gctx, cancel := context.WithTimeout(ctx, await+getMoreSlack)
		got := cur.TryNext(gctx)
		cancel()
		if got {
			return true
		}
		if cur.Err() != nil || cur.ID() == 0 {
			return false
		}
		caughtUp() // a getMore found nothing more
	}
}
