package dsyncmongo

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
)

// Wake-ups (see WithWakeups). Every process that holds or waits for a lock
// keeps one tailable-await cursor on a small capped collection of events:
//
//   - "wait": a process started waiting for key (and keeps waiting until
//     the server time "until"). A waiter announces itself once per
//     announceEvery per key.
//   - "released": a holder released epoch e of key. Sent only by a holder
//     that knows of a waiter for key (one of its own, or a "wait" event it
//     saw), so an uncontended Lock+Unlock stays at two commands.
//   - "open": written by a process before it opens its cursor, so that on
//     FerretDB the cursor's first batch (of size one) is full, which keeps
//     it open.
//
// Events are hints, never proof: a waiter woken by one still acquires by
// the epoch protocol. A missed event costs latency, bounded by the safety
// poll interval; while the stream is down, waiters poll as without it.

var _ dsync.Waiter = (*Backend)(nil)

const (
	eventWait     = "wait"
	eventReleased = "released"
	eventOpen     = "open"

	// eventsCap and eventsMaxDocs bound the capped events collection.
	eventsCap     = 1 << 20
	eventsMaxDocs = 1000
	// herdStep is the delay per known competing waiter a woken waiter
	// draws its random delay from, so that not every waiter sends an
	// attempt at the same instant after a release.
	herdStep = 2 * time.Millisecond
	// maxReopenBackoff bounds the pause between attempts to reopen the
	// event stream.
	maxReopenBackoff = 30 * time.Second
	// trimEvery: after each trimEvery events it has seen, a tailer deletes
	// the events older than those it saw trimEvery events earlier (minus
	// trimSlack). Capped collections bound themselves on MongoDB, but
	// FerretDB only trims them every so often (never, embedded), and its
	// tailable cursors re-read the whole collection every 10 ms while
	// waiting. A cursor positioned on a deleted event dies and is
	// reopened; the slack keeps that to cursors far behind.
	trimEvery = 32
	trimSlack = 5 * time.Second
)

// eventDoc is a document of the events collection.
type eventDoc struct {
	ID    bson.ObjectID `bson:"_id"`
	Kind  string        `bson:"kind"`
	Key   string        `bson:"key,omitempty"`
	Epoch int64         `bson:"epoch,omitempty"`
	Proc  string        `bson:"proc"`
	Until time.Time     `bson:"until,omitzero"` // "wait": server time
	// At is the earliest possible server time when the event was sent;
	// trimming goes by it.
	At time.Time `bson:"at"`
}

// wakeups is a Backend's event stream and its local waiters.
type wakeups struct {
	b    *Backend
	proc string // this Backend's id in events

	healthy atomic.Bool // the cursor is open and live
	cursor  atomic.Int64

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
	ready   chan struct{} // closed once the stream first became live (tests)
	readyOK bool
	local   map[string]map[chan struct{}]struct{}
	// remote: key → process → until (server time) of its last "wait".
	remote map[string]map[string]time.Time
	// announced: key → local monotonic time of our last "wait".
	announced map[string]time.Duration
	noticed   bool // the fallback was logged
}

func newWakeups(b *Backend) *wakeups {
	return &wakeups{
		b:         b,
		proc:      bson.NewObjectID().Hex(),
		ready:     make(chan struct{}),
		local:     make(map[string]map[chan struct{}]struct{}),
		remote:    make(map[string]map[string]time.Time),
		announced: make(map[string]time.Duration),
	}
}

// start starts the tailer unless it runs or the backend is closed.
func (w *wakeups) start(est *clockcheck.Estimator) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.stopped {
		return
	}
	w.started = true
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx, est)
}

// stop stops the tailer and waits for it.
func (w *wakeups) stop() {
	w.mu.Lock()
	w.stopped = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (w *wakeups) run(ctx context.Context, est *clockcheck.Estimator) {
	defer close(w.done)
	backoff := time.Second
	for {
		wasLive, err := w.tail(ctx, est)
		w.lost()
		if wasLive {
			backoff = time.Second
		}
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		first := !w.noticed
		w.noticed = true
		w.mu.Unlock()
		lvl := slog.LevelDebug
		if first {
			lvl = slog.LevelWarn
		}
		w.b.cfg.logger.Log(ctx, lvl, "dsyncmongo: wake-up event stream unavailable; waiters poll", slog.Any("err", err), slog.Duration("retry", backoff))
		t := time.NewTimer(jitter(backoff))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, maxReopenBackoff)
	}
}

// lost marks the stream down and wakes every local waiter, so that it
// falls back to polling at once: events may be missed until it reopens.
func (w *wakeups) lost() {
	w.healthy.Store(false)
	w.cursor.Store(0)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.local {
		for c := range set {
			notify(c)
		}
	}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// tail opens the cursor and handles events until it fails or ctx ends. It
// reports whether the stream was live (reached our "open" event).
func (w *wakeups) tail(ctx context.Context, est *clockcheck.Estimator) (live bool, err error) {
	db := w.b.db
	err = db.CreateCollection(ctx, w.b.cfg.collection+eventsSuffix, options.CreateCollection().
		SetCapped(true).SetSizeInBytes(eventsCap).SetMaxDocuments(eventsMaxDocs))
	var ce mongo.CommandError
	if err != nil && !(errors.As(err, &ce) && (ce.Code == 48 || ce.Name == "NamespaceExists")) {
		return false, err
	}
	coll := w.b.events
	open := eventDoc{ID: bson.NewObjectID(), Kind: eventOpen, Proc: w.proc, At: est.Now().Earliest}
	if _, err := coll.InsertOne(ctx, open); err != nil {
		return false, err
	}
	// Batch size 1: the first batch must be full for FerretDB to keep a
	// tailable cursor open; our "open" event is there at least.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().
		SetCursorType(options.TailableAwait).
		SetBatchSize(1).
		SetMaxAwaitTime(w.b.cfg.safetyPoll))
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = cur.Close(cctx)
	}()
	cur.SetBatchSize(256) // the history before "open" is read in bulk
	seen := 0
	var boundary time.Time // trim below it at the next trim point
	for cur.Next(ctx) {
		var e eventDoc
		if err := cur.Decode(&e); err != nil {
			continue
		}
		if !live {
			if e.ID == open.ID {
				live = true
				w.cursor.Store(cur.ID())
				w.healthy.Store(true)
				w.mu.Lock()
				if !w.readyOK {
					close(w.ready)
					w.readyOK = true
				}
				w.mu.Unlock()
				continue
			}
			if e.Kind == eventWait { // history: still-announced waiters count
				w.handle(est, e, false)
			}
			continue
		}
		w.handle(est, e, true)
		if seen++; seen%trimEvery == 0 && !e.At.IsZero() {
			if !boundary.IsZero() {
				_, err := coll.DeleteMany(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: boundary.Add(-trimSlack)}}}})
				if err != nil {
					w.b.cfg.logger.Debug("dsyncmongo: trimming events failed", slog.Any("err", err))
				}
			}
			boundary = e.At
		}
	}
	if err := cur.Err(); err != nil {
		return live, err
	}
	return live, errors.New("dsyncmongo: event cursor closed by the server")
}

func (w *wakeups) handle(est *clockcheck.Estimator, e eventDoc, live bool) {
	if e.Proc == w.proc || e.Key == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Kind {
	case eventWait:
		if !e.Until.After(est.Now().Earliest) {
			return
		}
		m := w.remote[e.Key]
		if m == nil {
			if len(w.remote) >= maxViews {
				w.expire(est)
			}
			m = make(map[string]time.Time)
			w.remote[e.Key] = m
		}
		m[e.Proc] = e.Until
	case eventReleased:
		if !live {
			return
		}
		for c := range w.local[e.Key] {
			notify(c)
		}
	}
}

// expire drops remote announcements that ended. w.mu is held.
func (w *wakeups) expire(est *clockcheck.Estimator) {
	now := est.Now().Earliest
	for k, m := range w.remote {
		for p, until := range m {
			if !until.After(now) {
				delete(m, p)
			}
		}
		if len(m) == 0 {
			delete(w.remote, k)
		}
	}
}

// released wakes the local waiters of key and, if other processes wait
// for it, tells them. Best effort: a failure only costs them latency.
func (w *wakeups) released(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) {
	w.mu.Lock()
	for c := range w.local[key] {
		notify(c)
	}
	remote := false
	if m := w.remote[key]; m != nil {
		now := est.Now().Earliest
		for p, until := range m {
			if until.After(now) {
				remote = true
			} else {
				delete(m, p)
			}
		}
		if len(m) == 0 {
			delete(w.remote, key)
		}
	}
	w.mu.Unlock()
	if !remote || !w.healthy.Load() {
		return
	}
	_, err := w.b.events.InsertOne(ctx, eventDoc{
		ID: bson.NewObjectID(), Kind: eventReleased, Key: key, Epoch: int64(epoch), Proc: w.proc,
		At: est.Now().Earliest,
	})
	if err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: release event not sent", slog.String("key", key), slog.Any("err", err))
	}
}

// add registers a local waiter for key; it returns the waiter's channel
// and how many waiters for key this process knows of, itself included.
func (w *wakeups) add(key string) (chan struct{}, int) {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.local[key]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.local[key] = set
	}
	set[c] = struct{}{}
	return c, len(set) + len(w.remote[key])
}

func (w *wakeups) remove(key string, c chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if set := w.local[key]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(w.local, key)
		}
	}
}

// announce sends a "wait" event for key unless one was sent recently. It
// reports whether it sent one now (the holder may not have seen it yet).
func (w *wakeups) announce(ctx context.Context, est *clockcheck.Estimator, key string) (fresh bool, err error) {
	safety := w.b.cfg.safetyPoll
	now := w.b.mono()
	w.mu.Lock()
	last, ok := w.announced[key]
	if ok && now-last < 2*safety {
		w.mu.Unlock()
		return false, nil
	}
	if len(w.announced) >= maxViews {
		for k, t := range w.announced {
			if now-t >= 2*safety {
				delete(w.announced, k)
			}
		}
		if len(w.announced) >= maxViews {
			clear(w.announced)
		}
	}
	w.announced[key] = now
	w.mu.Unlock()
	_, err = w.b.events.InsertOne(ctx, eventDoc{
		ID: bson.NewObjectID(), Kind: eventWait, Key: key, Proc: w.proc,
		Until: ceilMilli(est.Now().Latest.Add(3 * safety)), At: est.Now().Earliest,
	})
	if err != nil {
		w.mu.Lock()
		delete(w.announced, key)
		w.mu.Unlock()
		return false, err
	}
	return true, nil
}

// WaitFree implements dsync.Waiter: it returns when the holder of
// held.Key announces its release, or after held.RetryAfter, or when ctx
// ends. With wake-ups on (WithWakeups) and the event stream working, a
// waiter that has announced itself sleeps longer than RetryAfter: until
// the holder's epoch can have expired, at most the safety poll interval
// (WithSafetyPoll). Being woken proves nothing; the next Acquire decides.
func (b *Backend) WaitFree(ctx context.Context, held *dsync.HeldError) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	wait := held.RetryAfter
	if !b.cfg.wakeups || held.Key == "" {
		return sleepCtx(ctx, wait)
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return sleepCtx(ctx, wait)
	}
	w := b.wake
	w.start(est)
	c, n := w.add(held.Key)
	defer w.remove(held.Key, c)
	if w.healthy.Load() {
		fresh, err := w.announce(ctx, est, held.Key)
		switch {
		case err != nil:
			b.cfg.logger.Debug("dsyncmongo: wait announcement failed", slog.String("key", held.Key), slog.Any("err", err))
		case !fresh:
			// The holder's process has seen our announcement: sleep until
			// the epoch can have expired, at most the safety interval.
			safety := b.cfg.safetyPoll
			wait = max(wait, safety-time.Duration(rand.Int64N(int64(safety)/5+1)))
			if v, ok := b.views.get(held.Key); ok && v.known && v.epoch == held.Token && !v.released {
				wait = min(wait, jitterWait(est.Until(v.expiresAt)+time.Millisecond, b.cfg.safetyPoll))
			}
		}
	}
	t := time.NewTimer(max(wait, time.Millisecond))
	defer t.Stop()
	select {
	case <-c:
		if !w.healthy.Load() {
			return nil // the stream was lost: try now, then poll
		}
		// Spread the attempts of the waiters this process knows of.
		if d := time.Duration(rand.Int64N(int64(n)*int64(herdStep) + 1)); n > 1 && d > 0 {
			return sleepCtx(ctx, d)
		}
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(max(d, time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
