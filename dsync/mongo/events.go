package dsyncmongo

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
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
//   - "wait": a process waits for key, since the server time "since", and
//     keeps waiting until the server time "until". A process announces
//     itself when its first waiter starts waiting after the process held
//     the key or had its turn, again every reannounceAfter safety poll
//     intervals while it waits, and whenever another process opens its
//     cursor (which then learns the queues from these).
//   - "released": a holder released epoch e of key and names one waiting
//     process, "next": the one waiting longest. Only that process wakes
//     (one of its waiters, the longest waiting), so a release costs one
//     acquisition attempt however many wait: no herd. A named process
//     with no waiter left passes the turn on with an event of its own.
//     Sent only by a holder that knows of a waiting process, so an
//     uncontended Lock+Unlock stays at two commands.
//   - "open": written by a process before it opens its cursor, so that on
//     FerretDB the cursor's first batch (of size one) is full, which keeps
//     it open.
//
// Every process keeps the queue of waiting processes per key from these
// events: a "wait" adds its sender (keeping its place if already there),
// a "released" removes its sender and the process it names; both must
// announce themselves again if they still have waiters.
//
// Events are hints, never proof: a waiter woken by one still acquires by
// the epoch protocol. A missed event, or a named process that died, costs
// latency, bounded by the safety poll interval; while the stream is down,
// waiters poll as without it.

var _ dsync.Waiter = (*Backend)(nil)

const (
	eventWait     = "wait"
	eventReleased = "released"
	eventOpen     = "open"

	// eventsCap and eventsMaxDocs bound the capped events collection.
	eventsCap     = 1 << 20
	eventsMaxDocs = 1000
	// A "wait" announcement holds for announceFor safety poll intervals
	// and is renewed after reannounceAfter. Every event costs every
	// following process a getMore, so announcements are rare; what a long
	// life costs is little: a process that stopped waiting without its
	// turn stays in the queues, and when named, passes its turn on (or, if
	// it died, costs the next waiter at most a safety poll interval).
	announceFor     = 12
	reannounceAfter = 10
	// awaitFor: the event cursor's getMore waits up to awaitFor safety
	// poll intervals. Waiters do not depend on it: their own timers bound
	// every wait by the safety poll interval.
	awaitFor = 2
	// announceSettle: for this long after announcing itself, a waiter does
	// not rely on the holder having seen its announcement (an event takes
	// 10–20 ms to arrive on FerretDB), and wakes once it is over to look.
	announceSettle = 250 * time.Millisecond
	// reannounceDelay: how long after seeing another process open its
	// cursor a waiting process re-sends its announcements (±20%).
	reannounceDelay = 200 * time.Millisecond
	// yieldFor is how long a process that named another as next holder of
	// a key keeps from taking the key again itself (Acquire answers
	// "held"), so the named waiter gets its turn; if it does not take it
	// in that time (it died, say), the key is anyone's again.
	yieldFor = 250 * time.Millisecond
	// maxReopenBackoff bounds the pause between attempts to reopen the
	// event stream.
	maxReopenBackoff = 30 * time.Second
	// trimEvery, trimSlack: after each trimEvery events of its own that it
	// sees, a tailer deletes the events that are trimSlack older than the
	// last of them. Capped collections bound themselves on MongoDB, but
	// FerretDB only trims them every so often (never, embedded), and its
	// tailable cursors re-read the whole collection every 10 ms while
	// waiting, so it is kept short. A process that opens its cursor learns
	// the queues from the waiting processes, which announce themselves
	// again when they see its "open". A cursor positioned on a deleted
	// event dies and is reopened; the slack keeps that to cursors that fell
	// far behind.
	trimEvery = 16
	trimSlack = 2 * time.Second
)

// eventDoc is a document of the events collection.
type eventDoc struct {
	ID    bson.ObjectID `bson:"_id"`
	Kind  string        `bson:"kind"`
	Key   string        `bson:"key,omitempty"`
	Epoch int64         `bson:"epoch,omitempty"`
	Proc  string        `bson:"proc"`
	Until time.Time     `bson:"until,omitzero"` // "wait": server time
	Since time.Time     `bson:"since,omitzero"` // "wait": server time
	Next  string        `bson:"next,omitempty"` // "released": the named process
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
	// local: key → this process's waiters, longest waiting first.
	local map[string][]*localWaiter
	// remote: key → other waiting processes.
	remote map[string]map[string]remoteWaiter
	// announced: key → our announcement in force.
	announced map[string]announcement
	// yielding: key → until when (local monotonic) this process leaves
	// the key to the process it named.
	yielding map[string]time.Duration
	noticed  bool // the fallback was logged
	// reannouncing: the pending re-announcement for new cursors.
	reannouncing *time.Timer
}

// A localWaiter is one WaitFree call of this process.
type localWaiter struct {
	c chan struct{} // signalled to wake it
	// named: woken as the next holder, after the release of epoch (w.mu).
	named bool
	epoch uint64
}

// An announcement is this process's place in the queues of a key.
type announcement struct {
	sent  time.Duration // local monotonic time of our last "wait"
	since time.Time     // server time our waiting began
}

// A remoteWaiter is another process that announced it waits for a key.
type remoteWaiter struct {
	since time.Time // server time of its first "wait" still in force
	until time.Time // server time its last "wait" runs out
}

func newWakeups(b *Backend) *wakeups {
	return &wakeups{
		b:         b,
		proc:      bson.NewObjectID().Hex(),
		ready:     make(chan struct{}),
		local:     make(map[string][]*localWaiter),
		remote:    make(map[string]map[string]remoteWaiter),
		announced: make(map[string]announcement),
		yielding:  make(map[string]time.Duration),
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
	if w.reannouncing != nil {
		w.reannouncing.Stop()
	}
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
	for _, list := range w.local {
		for _, lw := range list {
			notify(lw.c)
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
		SetMaxAwaitTime(awaitFor*w.b.cfg.safetyPoll))
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = cur.Close(cctx)
	}()
	cur.SetBatchSize(256) // the history before "open" is read in bulk
	own := 0              // events of ours seen, for trimming
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
				places := len(w.announced) > 0
				w.mu.Unlock()
				if places {
					// Processes that opened their cursors while ours was
					// down have not heard of our places.
					w.reannounceSoon(ctx, est)
				}
				continue
			}
			w.handle(est, e, false) // history: learn the queues
			continue
		}
		switch w.handle(est, e, true) {
		case passTurn:
			w.passOn(ctx, est, e.Key, uint64(e.Epoch))
		case reannounce:
			w.reannounce(ctx, est, e.Key)
		case reannounceAll:
			w.reannounceSoon(ctx, est)
		}
		if e.Proc == w.proc {
			if own++; own%trimEvery == 0 && !e.At.IsZero() {
				w.trim(ctx, e.At.Add(-trimSlack))
			}
		}
	}
	if err := cur.Err(); err != nil {
		return live, err
	}
	return live, errors.New("dsyncmongo: event cursor closed by the server")
}

// trim deletes the events sent before cut. Best effort.
func (w *wakeups) trim(ctx context.Context, cut time.Time) {
	_, err := w.b.events.DeleteMany(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: cut}}}})
	if err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: trimming events failed", slog.Any("err", err))
	}
}

// An action is what the tailer must do after an event.
type action int

const (
	nothing       action = iota
	passTurn             // we were named but have no waiter: pass the turn on
	reannounce           // our other waiters of the event's key lost their place
	reannounceAll        // another process opened its cursor: tell it our places
)

// handle applies an event to the queues and, for a live "released" event
// that names this process, wakes its longest waiting waiter for the key.
func (w *wakeups) handle(est *clockcheck.Estimator, e eventDoc, live bool) action {
	if e.Proc == w.proc {
		return nothing
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e.Kind {
	case eventOpen:
		if live && len(w.announced) > 0 {
			return reannounceAll
		}
	case eventWait:
		if e.Key == "" || !e.Until.After(est.Now().Earliest) {
			return nothing
		}
		q := w.queue(est, e.Key)
		since := e.Since
		if since.IsZero() {
			since = e.At
		}
		rw, ok := q[e.Proc]
		if !ok || since.Before(rw.since) {
			rw.since = since
		}
		rw.until = e.Until
		q[e.Proc] = rw
	case eventReleased:
		// The sender held the key or passes its turn on, and the named
		// process is taking its turn: neither waits in the queue any more.
		if q := w.remote[e.Key]; q != nil {
			delete(q, e.Proc)
			delete(q, e.Next)
			if len(q) == 0 {
				delete(w.remote, e.Key)
			}
		}
		if e.Next != w.proc || e.Key == "" || !live {
			return nothing
		}
		// Our turn, and we are out of every queue of the key. If we had
		// left the key to someone, that is over.
		delete(w.announced, e.Key)
		delete(w.yielding, e.Key)
		if !w.nameLocal(e.Key, uint64(e.Epoch)) {
			return passTurn
		}
		for _, lw := range w.local[e.Key] {
			if !lw.named {
				return reannounce // the others still wait: back in line
			}
		}
	}
	return nothing
}

// nameLocal makes the longest waiting local waiter of key that is not
// named yet the next holder, after the release of epoch. It reports false
// if there is none. w.mu is held.
func (w *wakeups) nameLocal(key string, epoch uint64) bool {
	for _, lw := range w.local[key] {
		if !lw.named {
			lw.named, lw.epoch = true, epoch
			// The holder says it released epoch: the waiter may insert
			// epoch+1 at once and prove it afterwards (timing.go).
			w.b.views.hintReleased(key, epoch, w.b.mono())
			notify(lw.c)
			return true
		}
	}
	return false
}

// queue returns the queue of other processes waiting for key, without
// those whose announcement ran out. w.mu is held.
func (w *wakeups) queue(est *clockcheck.Estimator, key string) map[string]remoteWaiter {
	q := w.remote[key]
	if q == nil {
		if len(w.remote) >= maxViews {
			w.expire(est)
		}
		q = make(map[string]remoteWaiter)
		w.remote[key] = q
		return q
	}
	now := est.Now().Earliest
	for p, rw := range q {
		if !rw.until.After(now) {
			delete(q, p)
		}
	}
	return q
}

// expire drops remote announcements that ended. w.mu is held.
func (w *wakeups) expire(est *clockcheck.Estimator) {
	now := est.Now().Earliest
	for k, q := range w.remote {
		for p, rw := range q {
			if !rw.until.After(now) {
				delete(q, p)
			}
		}
		if len(q) == 0 {
			delete(w.remote, k)
		}
	}
}

// nextRemote removes and returns the process that has waited longest for
// key, or "" if no other process is known to wait. w.mu is held.
func (w *wakeups) nextRemote(est *clockcheck.Estimator, key string) string {
	if w.remote[key] == nil {
		return ""
	}
	q := w.queue(est, key)
	next, since := "", time.Time{}
	for p, rw := range q {
		if next == "" || rw.since.Before(since) || rw.since.Equal(since) && p < next {
			next, since = p, rw.since
		}
	}
	delete(q, next)
	if len(q) == 0 {
		delete(w.remote, key)
	}
	return next
}

// released follows this process's release of epoch of key. If another
// process waits for key, it names the one that has waited longest in a
// "released" event and keeps from taking the key for yieldFor; otherwise
// it wakes this process's own waiters. Best effort: a failure only costs
// latency.
func (w *wakeups) released(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) {
	w.mu.Lock()
	next := ""
	if w.healthy.Load() {
		next = w.nextRemote(est, key)
	}
	if next == "" {
		for _, lw := range w.local[key] {
			notify(lw.c)
		}
		w.mu.Unlock()
		return
	}
	if len(w.yielding) >= maxViews {
		now := w.b.mono()
		for k, until := range w.yielding {
			if until <= now {
				delete(w.yielding, k)
			}
		}
	}
	w.yielding[key] = w.b.mono() + yieldFor
	w.mu.Unlock()
	err := w.sendReleased(ctx, est, key, epoch, next)
	if err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: release event not sent", slog.String("key", key), slog.Any("err", err))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		delete(w.yielding, key)
	} else {
		// Our event took us out of every queue of key, after any
		// announcement made until now: our waiters, if any, wake to
		// announce themselves again (the yield keeps them from the key).
		delete(w.announced, key)
	}
	for _, lw := range w.local[key] {
		notify(lw.c)
	}
}

// passOn passes a turn this process was given for key, and cannot use, to
// the process that has waited longest after it, if any.
func (w *wakeups) passOn(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) {
	w.mu.Lock()
	next := w.nextRemote(est, key)
	w.mu.Unlock()
	if next == "" {
		return
	}
	if err := w.sendReleased(ctx, est, key, epoch, next); err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: passing a turn on failed", slog.String("key", key), slog.Any("err", err))
	}
}

// giveUp hands on the turn of a named local waiter that stopped waiting:
// to another local waiter of key if there is one, else to the next
// process in line.
func (w *wakeups) giveUp(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) {
	w.mu.Lock()
	named := w.nameLocal(key, epoch)
	w.mu.Unlock()
	if !named {
		w.passOn(ctx, est, key, epoch)
	}
}

func (w *wakeups) sendReleased(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64, next string) error {
	_, err := w.b.events.InsertOne(ctx, eventDoc{
		ID: bson.NewObjectID(), Kind: eventReleased, Key: key, Epoch: int64(epoch), Proc: w.proc,
		Next: next, At: est.Now().Earliest,
	})
	return err
}

// yieldLeft reports how much longer this process leaves key to the
// process it named after its last release of it.
func (w *wakeups) yieldLeft(key string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.yielding[key]
	if !ok {
		return 0
	}
	left := until - w.b.mono()
	if left <= 0 || !w.healthy.Load() {
		delete(w.yielding, key)
		return 0
	}
	return left
}

// add registers a local waiter for key, last in line.
func (w *wakeups) add(key string) *localWaiter {
	lw := &localWaiter{c: make(chan struct{}, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.local[key] = append(w.local[key], lw)
	return lw
}

// remove unregisters a local waiter. It reports whether the waiter had
// been named the next holder, and after which epoch's release: if it gives
// up, the turn must go on.
func (w *wakeups) remove(key string, lw *localWaiter) (named bool, epoch uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.local[key]
	if i := slices.Index(list, lw); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(w.local, key)
	} else {
		w.local[key] = list
	}
	return lw.named, lw.epoch
}

// announce puts this process in the queues of key, unless its
// announcement in force is recent. It returns how long ago the
// announcement in force was sent (0: now).
func (w *wakeups) announce(ctx context.Context, est *clockcheck.Estimator, key string) (age time.Duration, err error) {
	now := w.b.mono()
	w.mu.Lock()
	a, ok := w.announced[key]
	if ok && now-a.sent < reannounceAfter*w.b.cfg.safetyPoll {
		w.mu.Unlock()
		return now - a.sent, nil
	}
	if !ok {
		a.since = est.Now().Earliest
	}
	w.mu.Unlock()
	return 0, w.sendWait(ctx, est, key, a.since)
}

// reannounce sends our announcements in force again, for key or, if key
// is "", for every key this process still waits for.
func (w *wakeups) reannounce(ctx context.Context, est *clockcheck.Estimator, key string) {
	w.mu.Lock()
	places := map[string]time.Time{}
	for k, a := range w.announced {
		if (key == "" || k == key) && len(w.local[k]) > 0 {
			places[k] = a.since
		}
	}
	if key != "" && len(places) == 0 && len(w.local[key]) > 0 {
		places[key] = est.Now().Earliest // out of the queues: last in line
	}
	w.mu.Unlock()
	for k, since := range places {
		if err := w.sendWait(ctx, est, k, since); err != nil {
			w.b.cfg.logger.Debug("dsyncmongo: wait announcement failed", slog.String("key", k), slog.Any("err", err))
		}
	}
}

// reannounceSoon re-sends all our announcements in force after a short
// random delay, once for all the cursors opened meanwhile: processes tend
// to start together, and each of our events costs each of them a getMore.
func (w *wakeups) reannounceSoon(ctx context.Context, est *clockcheck.Estimator) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reannouncing != nil || w.stopped {
		return
	}
	w.reannouncing = time.AfterFunc(jitter(reannounceDelay), func() {
		w.mu.Lock()
		w.reannouncing = nil
		w.mu.Unlock()
		w.reannounce(ctx, est, "")
	})
}

// sendWait sends a "wait" event for key and records it as in force.
func (w *wakeups) sendWait(ctx context.Context, est *clockcheck.Estimator, key string, since time.Time) error {
	now := w.b.mono()
	w.mu.Lock()
	if _, ok := w.announced[key]; !ok && len(w.announced) >= maxViews {
		for k := range w.announced {
			if len(w.local[k]) == 0 {
				delete(w.announced, k)
			}
		}
	}
	w.announced[key] = announcement{sent: now, since: since}
	w.mu.Unlock()
	_, err := w.b.events.InsertOne(ctx, eventDoc{
		ID: bson.NewObjectID(), Kind: eventWait, Key: key, Proc: w.proc,
		Until: ceilMilli(est.Now().Latest.Add(announceFor * w.b.cfg.safetyPoll)),
		Since: since, At: est.Now().Earliest,
	})
	if err != nil {
		w.mu.Lock()
		if a, ok := w.announced[key]; ok && a.sent == now {
			delete(w.announced, key)
		}
		w.mu.Unlock()
	}
	return err
}

// WaitFree implements dsync.Waiter: it returns when this process is named
// the next holder of held.Key, or after held.RetryAfter, or when ctx ends.
// With wake-ups on (WithWakeups) and the event stream working, a waiter
// that has announced itself sleeps longer than RetryAfter: until the
// holder's epoch can have expired, at most the safety poll interval
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
	lw := w.add(held.Key)
	if w.healthy.Load() {
		age, err := w.announce(ctx, est, held.Key)
		switch {
		case err != nil:
			b.cfg.logger.Debug("dsyncmongo: wait announcement failed", slog.String("key", held.Key), slog.Any("err", err))
		case age < announceSettle:
			// The holder may not have seen our announcement yet: look
			// again once it surely has.
			wait = max(wait, announceSettle-age)
		case w.yieldLeft(held.Key) == 0:
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
	case <-lw.c:
		w.remove(held.Key, lw)
		return nil
	case <-t.C:
		w.remove(held.Key, lw)
		return nil
	case <-ctx.Done():
		if named, epoch := w.remove(held.Key, lw); named {
			// Named, but giving up: hand the turn on.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			w.giveUp(pctx, est, held.Key, epoch)
		}
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
