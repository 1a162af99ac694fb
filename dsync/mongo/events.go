package dsyncmongo

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/internal/chain"
)

// Wake-ups (see WithWakeups). Every Backend that holds or waits for a lock
// follows one capped collection of events with one tailable-await cursor:
//
//   - "wait" {key, epoch, until}: a process waits for the claim of key's
//     epoch to end, until the server time "until" (it announces again
//     before then if it still waits).
//   - "ended" {key, epoch}: the claim ended (released or withdrawn). Sent
//     only by its owner, and only when some other process announced that
//     it waits for it, so an uncontended Lock+Unlock stays at two
//     commands. A waiter in the owner's own process is woken directly.
//   - "open": written by a process before it opens its cursor, so that on
//     FerretDB the cursor's first batch (of size one) is full, which keeps
//     it open.
//
// Only the process waiting for that claim acts on an "ended" event, and it
// confirms with one read of the claim's end marker. Events are hints,
// never proof: queues live in the lock collection. A missed event costs
// latency, at most the safety poll interval; while the stream is down,
// waiters poll. Where the events collection exists but is not capped, or
// the server refuses capped collections or tailable cursors, the tailer
// says so once (Warn) and stops for good: waiters poll.

const (
	eventWait  = "wait"
	eventEnded = "ended"
	eventOpen  = "open"

	// eventsCap and eventsMaxDocs bound the capped events collection.
	eventsCap     = 1 << 20
	eventsMaxDocs = 1000
	// trimSlack and trimEvery: on FerretDB, which does not bound capped
	// collections by itself, a process that sent an event deletes the
	// events its cursor returned trimSlack or more ago, except the newest
	// one, at most once per trimEvery, until none is left to delete.
	// MongoDB bounds a capped collection itself (and deletes from one only
	// from 5.0.7 on): there the backend deletes nothing.
	//
	// FerretDB 1.24 answers a waiting tailable cursor by re-reading the
	// collection every 10 ms, decoding every event up to the last one the
	// cursor returned: about 0.5 ms plus 0.06 ms per event kept, per
	// process following the stream, a hundred times a second. With 16
	// processes following and 10 s of events kept, two cores were not
	// enough. Every cursor that keeps up reads an event within about
	// 20 ms of its insert; what is trimmed is missed only by a cursor that
	// lags further, or opens later (it reopens a second or more after a
	// failure): a waiter it should have woken looks again within the
	// safety poll interval, and a waiter whose own stream reopens
	// announces itself again. A cursor whose last event is deleted fails
	// on FerretDB, and reopens; the newest event is never deleted.
	//
	// Deleting by _id what the cursor returned, rather than by the "at"
	// of events, makes trimming independent of the senders' clocks (and
	// of how late an insert lands).
	trimSlack = 250 * time.Millisecond
	trimEvery = 250 * time.Millisecond
	// maxSeen bounds the events remembered for trimming.
	maxSeen = 4096
	// lostWindow is how long after announcing itself a waiter looks
	// again at doubling intervals, against lost events (see wait).
	lostWindow = time.Second
	// endMemory is how long a process remembers a claim it ended, to
	// answer an announcement that arrives after the end with an "ended"
	// event.
	endMemory = 10 * time.Second
	// maxReopenBackoff caps the wait before reopening a failed stream.
	maxReopenBackoff = 30 * time.Second
	// ferretAwait caps how long a getMore of the event cursor waits on
	// FerretDB while other processes wait. FerretDB 1.24 answers a
	// waiting getMore by querying the collection every 10 ms, and each
	// query closes again every iterator that the getMore's earlier
	// queries opened (awaitData keeps them in one MultiCloser): the cost
	// of a waiting cursor grows with how long its getMore has waited.
	// Measured with 16 waiting backends and a holder, each following the
	// stream, and one event kept (in FerretDB's process, clients
	// included): 122% of a core with getMores of 15 s, 66% with 5 s, 46%
	// with 2 s. Each getMore is a command: 0.2 per second per process at
	// 5 s. A process that follows
	// the stream while no other one waits (a holder alone, a lone waiter)
	// keeps the long getMores: one or two cursors cost FerretDB little.
	// MongoDB pushes events to a waiting getMore; there the getMore waits
	// the safety poll interval.
	ferretAwait = 5 * time.Second
	// announceFor is how long an announcement holds, in safety poll
	// intervals; a waiter announces itself again when less than one is
	// left. Longer costs only "ended" events sent for a waiter that gave
	// up, for as long.
	announceFor = 8
)

type eventDoc struct {
	ID    bson.ObjectID `bson:"_id"`
	Kind  string        `bson:"kind"`
	Proc  string        `bson:"proc"`
	Key   string        `bson:"key,omitempty"`
	Epoch int64         `bson:"epoch,omitempty"`
	At    time.Time     `bson:"at"`              // earliest server time at sending
	Until time.Time     `bson:"until,omitempty"` // "wait": when the announcement lapses
}

// waitKey names a claim that waiters wait for.
type waitKey struct {
	key   string
	epoch uint64
}

type wakeups struct {
	b    *Backend
	proc string // this process's id in events

	healthy atomic.Bool  // the cursor is open and caught up
	off     atomic.Bool  // wake-ups cannot work here: the tailer stopped for good
	cursor  atomic.Int64 // its id while healthy, for tests that kill it
	ownSeen atomic.Int64 // events of ours the cursor returned (tests)
	// seen: the events the cursor returned, oldest first, for trimming
	// (FerretDB only).
	seenMu sync.Mutex
	seen   []seenEvent

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
	// local: this process's waiters, by the claim they wait for.
	local map[waitKey]map[chan struct{}]struct{}
	// remote: claims other processes announced they wait for, until when
	// (server time).
	remote map[waitKey]time.Time
	// announced: our announcements.
	announced map[waitKey]announcement
	// remoteTop: for a key, the highest claim another process announced
	// it waits for, and until when.
	remoteTop map[string]topWait
	// gen counts the times the stream turned live, the last time at
	// liveAt (local monotonic); mine holds, for each claim of ours not yet
	// ended, gen when it was made (0: not live) and when.
	gen    uint64
	liveAt time.Duration
	mine   map[waitKey]claimMark
	// unsure: claims of ours that ended while the stream was not live,
	// with when they were made: once it is live, the ends of those made
	// too long before are announced (announcements may have been trimmed
	// before the stream could read them).
	unsure map[waitKey]time.Duration
	// next: for a key, the claim a local waiter waits for that was seen
	// to become the head of the queue (the claim below it ended): such a
	// waiter is woken by any other event about the key, in case the end
	// of its claim was lost on the way.
	next map[string]uint64
	// ends: claims this process ended lately (local monotonic time of the
	// end), so that an announcement that comes after the end is answered.
	ends map[waitKey]time.Duration
	// claimWatch: Mutexes waiting for a claim of a key at or above an
	// epoch (relock.go); nil until the first.
	claimWatch map[string]map[chan struct{}]uint64
	// othersWaitAt: when the stream last showed another process announce
	// that it waits (local monotonic; 0: never).
	othersWaitAt time.Duration
	noticed      bool // the stream's first failure was logged
}

// A topWait is the highest claim of a key that another process announced
// it waits for.
type topWait struct {
	epoch uint64
	until time.Time
}

// maxMine bounds the claims of ours remembered (past it, all are
// forgotten, and their ends announced as if the stream had been down).
const maxMine = 1 << 16

// maxRemote bounds the announcements kept; past it, expired ones are
// dropped, and then everything (a dropped one costs a waiter latency).
const maxRemote = 8192

func newWakeups(b *Backend) *wakeups {
	return &wakeups{
		b:         b,
		proc:      bson.NewObjectID().Hex(),
		local:     make(map[waitKey]map[chan struct{}]struct{}),
		remote:    make(map[waitKey]time.Time),
		announced: make(map[waitKey]announcement),
		ends:      make(map[waitKey]time.Duration),
		next:      make(map[string]uint64),
		remoteTop: make(map[string]topWait),
		mine:      make(map[waitKey]claimMark),
		unsure:    make(map[waitKey]time.Duration),
	}
}

// start starts the tailer unless it runs or the backend is closed.
func (w *wakeups) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.stopped {
		return
	}
	w.started = true
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx)
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

func (w *wakeups) run(ctx context.Context) {
	defer close(w.done)
	backoff := time.Second
	for {
		wasLive, err := w.tail(ctx)
		w.lost()
		if wasLive {
			backoff = time.Second
		}
		if ctx.Err() != nil {
			return
		}
		var ne *noEventsError
		if errors.As(err, &ne) {
			// For good: waiters poll from now on.
			w.off.Store(true)
			w.b.cfg.logger.Warn("dsyncmongo: wake-ups are off: "+ne.reason+"; waiters poll (WithPollInterval)",
				slog.String("collection", w.b.cfg.collection+eventsSuffix), slog.Any("err", ne.err))
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
// Our announcements are forgotten: they are made again once it is back.
func (w *wakeups) lost() {
	w.healthy.Store(false)
	w.cursor.Store(0)
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.announced)
	w.wakeAllLocked()
}

// wakeAllLocked wakes every waiter of this process, to look again. w.mu
// must be held.
func (w *wakeups) wakeAllLocked() {
	for _, waiters := range w.local {
		for c := range waiters {
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
func (w *wakeups) tail(ctx context.Context) (live bool, err error) {
	est, err := w.b.prepare(ctx)
	if err != nil {
		return false, err
	}
	if err := w.createEvents(ctx); err != nil {
		return false, err
	}
	coll := w.b.events
	open := eventDoc{ID: bson.NewObjectID(), Kind: eventOpen, Proc: w.proc, At: est.Now().Earliest}
	if err := w.insert(ctx, open); err != nil {
		return false, err
	}
	// Batch size 1: the first batch must be full for FerretDB to keep a
	// tailable cursor open; our "open" event is there at least. How long
	// each getMore waits is set before each one (awaitTime).
	cur, err := coll.Find(ctx, bson.D{}, options.Find().
		SetCursorType(options.TailableAwait).
		SetBatchSize(1))
	if err != nil {
		if unsupported(err) {
			return false, &noEventsError{"the server refuses a tailable cursor on the events collection", err}
		}
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = cur.Close(cctx)
	}()
	cur.SetBatchSize(256) // the history before "open" is read in bulk
	var trims chan struct{}
	if w.b.ferret.Load() {
		trims = make(chan struct{}, 1)
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.trimmer(tctx, trims)
		}()
		defer func() {
			cancel()
			<-done
		}()
		w.seenMu.Lock()
		w.seen = w.seen[:0]
		w.seenMu.Unlock()
	}
	for cur.SetMaxAwaitTime(w.awaitTime()); cur.Next(ctx); cur.SetMaxAwaitTime(w.awaitTime()) {
		var e eventDoc
		if err := cur.Decode(&e); err != nil {
			continue
		}
		if trims != nil {
			w.seenMu.Lock()
			if len(w.seen) >= maxSeen {
				w.seen = append(w.seen[:0], w.seen[len(w.seen)/2:]...)
			}
			w.seen = append(w.seen, seenEvent{id: e.ID, at: w.b.mono()})
			w.seenMu.Unlock()
		}
		if e.Proc == w.proc {
			w.ownSeen.Add(1)
			if trims != nil {
				select {
				case trims <- struct{}{}:
				default: // already asked
				}
			}
			if e.ID == open.ID && !live {
				live = true
				w.cursor.Store(cur.ID())
				w.mu.Lock()
				w.gen++
				w.liveAt = w.b.mono()
				var blind []waitKey
				for k, at := range w.unsure {
					if w.liveAt-at >= trimSlack {
						blind = append(blind, k)
					}
				}
				clear(w.unsure)
				w.mu.Unlock()
				for _, k := range blind {
					w.sendEnded(ctx, est, k)
				}
				w.healthy.Store(true)
				// Waiters that began to wait while the stream was not
				// live did not announce themselves, so no owner will
				// wake them, and they sleep for a poll interval: wake
				// them to look once more and announce themselves.
				w.mu.Lock()
				w.wakeAllLocked()
				w.mu.Unlock()
			}
			continue
		}
		w.handle(ctx, est, e)
	}
	if err := cur.Err(); err != nil {
		return live, err
	}
	return live, errors.New("dsyncmongo: event cursor closed by the server")
}

// awaitTime is how long the next getMore of the event cursor waits for an
// event: the safety poll interval, or at most ferretAwait on FerretDB while
// other processes wait (their cursors are what makes long getMores costly
// there; a process that follows the stream alone costs FerretDB little).
func (w *wakeups) awaitTime() time.Duration {
	if w.b.ferret.Load() {
		w.mu.Lock()
		othersWait := w.othersWaitAt != 0 && w.b.mono()-w.othersWaitAt < announceFor*w.b.cfg.safetyPoll
		w.mu.Unlock()
		if othersWait {
			return min(w.b.cfg.safetyPoll, ferretAwait)
		}
	}
	return w.b.cfg.safetyPoll
}

// createEvents creates the capped events collection unless it exists. A
// collection of that name that is not capped, or a server without capped
// collections, is a *noEventsError.
func (w *wakeups) createEvents(ctx context.Context) error {
	name := w.b.cfg.collection + eventsSuffix
	err := w.b.fault("create events")
	if err == nil {
		err = w.b.db.CreateCollection(ctx, name, options.CreateCollection().
			SetCapped(true).SetSizeInBytes(eventsCap).SetMaxDocuments(eventsMaxDocs))
	}
	var ce mongo.CommandError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && (ce.Code == 48 || ce.Name == "NamespaceExists"):
		specs, lerr := w.b.db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: name}})
		if lerr != nil || len(specs) != 1 || specs[0].Options == nil {
			// Unknown: a tailable cursor on it fails if it is not capped.
			return nil
		}
		if capped, _ := specs[0].Options.Lookup("capped").BooleanOK(); !capped {
			return &noEventsError{"the events collection exists but is not capped (drop it, and a backend recreates it capped)", err}
		}
		return nil
	case unsupported(err):
		return &noEventsError{"the server does not support capped collections", err}
	}
	return err
}

// noEventsError: wake-ups cannot work on this deployment.
type noEventsError struct {
	reason string
	err    error
}

func (e *noEventsError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *noEventsError) Unwrap() error { return e.err }

// unsupported reports whether the server refuses a capped collection or a
// tailable cursor as a feature it lacks, rather than for a passing cause:
// CommandNotSupported (115), NotImplemented (238), APIStrictError (323,
// the Stable API in strict mode), or a message that says so (Atlas
// serverless, Amazon DocumentDB, Azure Cosmos DB; a tailable cursor on a
// collection that is not capped).
func unsupported(err error) bool {
	var se mongo.ServerError
	if !errors.As(err, &se) {
		return false
	}
	if se.HasErrorCode(115) || se.HasErrorCode(238) || se.HasErrorCode(323) {
		return true
	}
	msg := strings.ToLower(se.Error())
	for _, s := range []string{"not supported", "unsupported", "not allowed", "not_allowed", "non capped", "not capped", "non-capped"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// insert writes an event, with the write timeout.
func (w *wakeups) insert(ctx context.Context, e eventDoc) error {
	return w.b.write(ctx, "event", func(ctx context.Context) error {
		_, err := w.b.events.InsertOne(ctx, e)
		return err
	})
}

// A seenEvent is an event the cursor returned, and when (local monotonic).
type seenEvent struct {
	id bson.ObjectID
	at time.Duration
}

// trimmer deletes old events (FerretDB only) until ctx ends. Asked after
// an event of ours, it deletes the events the cursor returned trimSlack
// or more ago, except the newest one, waiting for them to age and at
// least trimEvery between deletes; and once more for those that were too
// young, so that a quiet stream ends with one event kept.
func (w *wakeups) trimmer(ctx context.Context, asked <-chan struct{}) {
	var last time.Duration
	first := true
	for {
		select {
		case <-asked:
		case <-ctx.Done():
			return
		}
		for range 2 {
			w.seenMu.Lock()
			var due time.Duration
			if n := len(w.seen); n > 1 {
				due = w.seen[0].at + trimSlack
			}
			w.seenMu.Unlock()
			if due == 0 {
				break // nothing but the newest event
			}
			if !first {
				due = max(due, last+trimEvery)
			}
			if d := due - w.b.mono(); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
			now := w.b.mono()
			w.seenMu.Lock()
			n := 0
			for n < len(w.seen)-1 && now-w.seen[n].at >= trimSlack {
				n++
			}
			ids := make([]bson.ObjectID, n)
			for i := range n {
				ids[i] = w.seen[i].id
			}
			w.seen = append(w.seen[:0], w.seen[n:]...)
			w.seenMu.Unlock()
			if n > 0 {
				w.trim(ctx, ids)
			}
			last, first = w.b.mono(), false
		}
	}
}

// trim deletes the events ids. Best effort. Only FerretDB needs it.
func (w *wakeups) trim(ctx context.Context, ids []bson.ObjectID) {
	err := w.b.write(ctx, "trim events", func(ctx context.Context) error {
		_, err := w.b.events.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		return err
	})
	if err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: trimming events failed", slog.Any("err", err))
	}
}

// handle applies another process's event. History read before our "open"
// event counts as well: announcements made before we opened still hold.
func (w *wakeups) handle(ctx context.Context, est *clockcheck.Estimator, e eventDoc) {
	if e.Key == "" || e.Epoch <= 0 {
		return
	}
	k := waitKey{e.Key, uint64(e.Epoch)}
	w.mu.Lock()
	if b, ok := w.next[e.Key]; ok && !(e.Kind == eventEnded && b == k.epoch) {
		// Activity about the key of a waiter that is next in line: the
		// end it waits for may have been lost; it looks (one read).
		for c := range w.local[waitKey{e.Key, b}] {
			notify(c)
		}
	}
	switch e.Kind {
	case eventWait:
		// The announcer's claim is above the one it waits for.
		w.claimSeenLocked(e.Key, k.epoch+1)
		if !e.Until.After(est.Now().Earliest) {
			break
		}
		w.othersWaitAt = w.b.mono()
		if at, ok := w.ends[k]; ok && w.b.mono()-at < endMemory {
			// We ended that claim before the announcement reached us:
			// answer it now, or the waiter would learn of the end only at
			// its next look.
			w.mu.Unlock()
			w.sendEnded(ctx, est, k)
			return
		}
		if len(w.remote) >= maxRemote {
			w.expireLocked(est)
		}
		if e.Until.After(w.remote[k]) {
			w.remote[k] = e.Until
		}
		if top := w.remoteTop[e.Key]; k.epoch > top.epoch || k.epoch == top.epoch && e.Until.After(top.until) {
			if len(w.remoteTop) >= maxRemote {
				clear(w.remoteTop)
			}
			w.remoteTop[e.Key] = topWait{k.epoch, e.Until}
		}
	case eventEnded:
		for c := range w.local[k] {
			notify(c)
		}
		if after := (waitKey{e.Key, k.epoch + 1}); len(w.local[after]) > 0 {
			// The claim after the one that ended heads the queue now (if
			// it was not withdrawn): who waits for it is next in line.
			if len(w.next) >= maxRemote {
				clear(w.next)
			}
			w.next[e.Key] = after.epoch
		}
	}
	w.mu.Unlock()
}

func (w *wakeups) expireLocked(est *clockcheck.Estimator) {
	now := est.Now().Earliest
	for k, until := range w.remote {
		if !until.After(now) {
			delete(w.remote, k)
		}
	}
	if len(w.remote) >= maxRemote {
		clear(w.remote)
	}
}

// wait blocks a waiter whose claim is behind blocker until blocker's end
// may have been recorded: an "ended" event for it, the moment its session
// can have expired, or the poll interval (the safety poll interval while
// the event stream is live). It returns nil to walk again, or ctx's cause.
func (w *wakeups) wait(ctx context.Context, est *clockcheck.Estimator, key string, blocker chain.Blocker) error {
	k := waitKey{key, blocker.Epoch}
	c := make(chan struct{}, 1)
	w.mu.Lock()
	if w.local[k] == nil {
		w.local[k] = make(map[chan struct{}]struct{})
	}
	w.local[k][c] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.local[k], c)
		if len(w.local[k]) == 0 {
			delete(w.local, k)
		}
		w.mu.Unlock()
	}()

	expires := blocker.ExpiresAt
	poll := w.b.cfg.poll
	if w.b.cfg.wakeups && w.healthy.Load() {
		// The owner of the claim sends "ended" when it ends the claim if
		// it has heard of us by then, or when it hears of us if it ended
		// the claim first. But FerretDB loses events: a tailable cursor
		// skips an event whose insert commits after that of a later one
		// it has returned (it numbers records before writing them), a
		// few in a thousand under concurrent inserts. So for lostWindow
		// after an announcement a waiter looks again at doubling
		// intervals (from the poll interval), covering ends that come
		// soon; the next in line also looks whenever another event about
		// its key passes (see handle); after that only the safety poll.
		if age, err := w.announce(ctx, est, k); err == nil {
			poll = w.b.cfg.safetyPoll
			if age < lostWindow {
				poll = min(max(w.b.cfg.poll, age), poll)
			}
		}
	}
	// Whatever happens, the caller looks again within poll.
	lookAgain := w.b.mono() + poll
	for {
		// Until answers "when is Earliest at or after"; a millisecond
		// more makes it strictly after.
		wait := min(est.Until(expires)+time.Millisecond, lookAgain-w.b.mono())
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(jitterUp(wait))
		select {
		case <-c:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		if !w.b.cfg.wakeups || !w.healthy.Load() || w.b.mono() >= lookAgain || !est.Now().Earliest.After(expires) {
			return nil
		}
		// The blocker's session may have run out. With events flowing, its
		// end would have been announced: one read of the session tells
		// whether it was renewed meanwhile, and the wait goes on until the
		// new expiry or the time to look again.
		alive, renewed, err := w.b.eng.SessionAlive(ctx, blocker.Session)
		if err != nil || !alive || !renewed.After(expires) {
			return nil
		}
		expires = renewed
	}
}

// jitterUp spreads waiters that wake at once a little: a wait grows by up
// to 1% or 10 ms, whichever is less, and never shrinks, so a waiter never
// looks before the moment it waits for (such as a session's expiry), nor
// much after it: FIFO order means only one waiter acts on it anyway.
func jitterUp(d time.Duration) time.Duration {
	return max(d+rand.N(min(d/100, 10*time.Millisecond)+1), time.Millisecond)
}

// announce tells the other processes that this one waits for k, unless an
// announcement of ours still holds for more than a safety poll interval.
// It returns the age of the announcement in force.
func (w *wakeups) announce(ctx context.Context, est *clockcheck.Estimator, k waitKey) (time.Duration, error) {
	now := est.Now()
	w.mu.Lock()
	a, ok := w.announced[k]
	w.mu.Unlock()
	if ok && a.until.Sub(now.Latest) > w.b.cfg.safetyPoll {
		return w.b.mono() - a.sent, nil
	}
	sent, again := w.b.mono(), ok && a.until.After(now.Earliest)
	if again {
		// Announcing again while the last announcement holds: the owner
		// has heard of us since then (or lost the event, as it may lose
		// this one), so the looks that follow a first announcement are
		// not needed again. Its age runs from the first.
		sent = a.sent
	}
	until := now.Earliest.Add(announceFor * w.b.cfg.safetyPoll)
	e := eventDoc{ID: bson.NewObjectID(), Kind: eventWait, Proc: w.proc, Key: k.key, Epoch: int64(k.epoch), At: now.Earliest, Until: until}
	if err := w.insert(ctx, e); err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: announcing a waiter failed", slog.Any("err", err))
		return 0, err
	}
	w.mu.Lock()
	if len(w.announced) >= maxRemote {
		clear(w.announced)
	}
	w.announced[k] = announcement{until: until, sent: sent}
	w.mu.Unlock()
	if again {
		return w.b.mono() - sent, nil
	}
	return 0, nil
}

// An announcement is one of our "wait" events: until when it holds (server
// time), and when it was sent (local monotonic).
type announcement struct {
	until time.Time
	sent  time.Duration
}

// A claimMark is what the tailer knew when a claim of ours was made.
type claimMark struct {
	gen uint64        // the stream's generation if live, else 0
	at  time.Duration // local monotonic
}

// claimed records a claim of ours, and whether the stream is live as it
// is made: an announcement for it can only come after it exists.
func (w *wakeups) claimed(key string, epoch uint64) {
	if !w.b.cfg.wakeups {
		return
	}
	k := waitKey{key, epoch}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mine) >= maxMine {
		clear(w.mine) // their ends are then announced as if blind
	}
	m := claimMark{at: w.b.mono()}
	if w.healthy.Load() {
		m.gen = w.gen
	}
	w.mine[k] = m
}

// seenAll reports whether the stream has shown every announcement made
// for a claim of ours: it was live since the claim was made, or it turned
// live (reading the events kept, which trimming keeps for trimSlack after
// they are seen) less than trimSlack after. w.mu must be held.
func (w *wakeups) seenAll(k waitKey) bool {
	m, ok := w.mine[k]
	switch {
	case !ok || !w.healthy.Load():
		return false
	case m.gen != 0:
		return m.gen == w.gen
	default:
		return w.liveAt-m.at < trimSlack
	}
}

// ended wakes the waiters for key's epoch: those of this process directly,
// and others through an "ended" event if one of them may wait for it:
// another process announced it waits for it, or for a later claim of the
// key (its own announcement may have been lost on the way), or our stream
// was not live all along since the claim was made (announcements may have
// passed unseen). Best effort: a waiter that misses it looks again later.
func (w *wakeups) ended(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) {
	k := waitKey{key, epoch}
	now := est.Now().Earliest
	w.mu.Lock()
	for c := range w.local[k] {
		notify(c)
	}
	until, waited := w.remote[k]
	delete(w.remote, k)
	waited = waited && until.After(now)
	if top, ok := w.remoteTop[key]; ok && top.epoch > epoch && top.until.After(now) {
		waited = true
	}
	if m, ok := w.mine[k]; ok && !w.healthy.Load() && !w.off.Load() {
		// Too early to tell: the stream, once live, reads the
		// announcements kept (and answers them, see handle), and
		// announces this end if some may have been trimmed by then.
		if len(w.unsure) >= maxRemote {
			clear(w.unsure)
		}
		w.unsure[k] = m.at
	} else if !w.seenAll(k) {
		waited = true
	}
	delete(w.mine, k)
	if w.b.cfg.wakeups {
		mono := w.b.mono()
		if len(w.ends) >= maxRemote {
			for k, at := range w.ends {
				if mono-at >= endMemory {
					delete(w.ends, k)
				}
			}
			if len(w.ends) >= maxRemote {
				clear(w.ends)
			}
		}
		w.ends[k] = mono
	}
	w.mu.Unlock()
	if !w.b.cfg.wakeups || !waited || w.off.Load() {
		return
	}
	w.sendEnded(ctx, est, k)
}

// sendEnded appends an "ended" event for k.
func (w *wakeups) sendEnded(ctx context.Context, est *clockcheck.Estimator, k waitKey) {
	e := eventDoc{ID: bson.NewObjectID(), Kind: eventEnded, Proc: w.proc, Key: k.key, Epoch: int64(k.epoch), At: est.Now().Earliest}
	if err := w.insert(ctx, e); err != nil {
		w.b.cfg.logger.Debug("dsyncmongo: announcing an end failed", slog.String("key", k.key), slog.Any("err", err))
	}
}
