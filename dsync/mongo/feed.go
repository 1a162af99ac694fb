package dsyncmongo

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
)

// The wake-up feed (driver.Feed). Events go through one capped collection,
// the lock collection's name + "_events", which every process that holds
// or waits for a lock follows with one tailable-await cursor:
//
//   - "wait" {key, epoch, until, own}: a process waits for the claim of
//     key's epoch to end (driver.Waiting), with its own claim of key's
//     epoch own (absent from an older dsync's).
//   - "ended" {key, epoch}: the claim ended (driver.Ended): released,
//     or withdrawn by a waiter that had announced it waits.
//   - "open": written by a follower before it opens its cursor (its proc
//     names the follower, not a process: trim.go). Reaching
//     it is how the follower knows its stream is live; on FerretDB it
//     also fills the cursor's first batch (of size one), which keeps the
//     cursor open.
//
// Where the events collection exists but is not capped, or the server
// refuses capped collections or tailable cursors, the follower reports
// the feed off for good, and waiters poll.

const (
	eventWait  = "wait"
	eventEnded = "ended"
	eventOpen  = "open"

	// eventsSuffix names the events collection after the lock collection.
	eventsSuffix = "_events"
	// eventsCap and eventsMaxDocs bound the capped events collection.
	eventsCap     = 1 << 20
	eventsMaxDocs = 1000
	// maxReopenBackoff caps the wait before reopening a failed stream.
	maxReopenBackoff = 30 * time.Second
	// A live stream that failed is reopened without going down (see
	// follow): at once if it had been live for quickCalm, else after a
	// pause that doubles from quickFirst up to quickMax.
	quickCalm  = 5 * time.Second
	quickFirst = 50 * time.Millisecond
	quickMax   = time.Second
	quickTries = 3
	// ferretAwait caps how long a getMore of the event cursor waits on
	// FerretDB while other processes wait. FerretDB 1.24 answers a
	// waiting getMore by querying the collection every 10 ms, and each
	// query closes again every iterator the getMore's earlier queries
	// opened: the cost of a waiting cursor grows with how long its
	// getMore has waited (the server's load with this cap:
	// bench/RESULTS.md, "Load of waiting processes"). Each getMore is a
	// command, one per 5 s per process. A
	// process that follows the stream while no other one waits keeps the
	// long getMores: one or two cursors cost FerretDB little. MongoDB
	// pushes events to a waiting getMore; there the getMore waits the
	// safety poll interval.
	ferretAwait = 5 * time.Second
	// othersWaitGrace is how long after the stream last showed another
	// process announce that it waits the getMores stay short on FerretDB
	// at least, though the claim it named ended: a queue that hands over
	// every few milliseconds has waits between its announcements. Beyond
	// it they stay short only while a wait the stream showed holds
	// (feed_waits.go). It was eight safety poll intervals (two minutes),
	// from when announcements were made again every seven: a partition's
	// members sent a getMore every 5 s for two minutes after any join
	// (issue 45).
	othersWaitGrace = 2 * ferretAwait
)

// A feed is the store's wake-up feed: what it publishes into the events
// collection, and the follower of the stream (a tailer), one per store.
// mu guards tail, closed and pauseFirst, and is held only to read or set
// them: never while another lock is taken, nor while a follower stops.
// insertMu orders this store's event inserts on FerretDB (insertEvent):
// it is held across one insert, never with mu; the writer takes its own
// lock within that insert, after it.
type feed struct {
	db     *mongo.Database // creates the events collection
	events *mongo.Collection
	cfg    *config
	writer *writer
	clock  *serverClock
	// platform says whether the server is FerretDB, where the feed trims
	// the events itself (trim.go) and sends its own inserts one at a time.
	platform *platform
	// prepare prepares the store (Store.prepare), which the feed's first
	// insert or cursor needs.
	prepare func(context.Context) (*clockcheck.Estimator, error)

	mu     sync.Mutex
	tail   *tailer // the wake-up stream's follower; nil until Follow
	closed bool    // the store is closing: Follow starts none
	// pauseFirst: Pause(true) came before Follow (feed_pause.go).
	pauseFirst bool
	// publishedBy is the Proc of the events published through this store
	// (its Client's), so that the follower knows them for its own.
	publishedBy atomic.Pointer[string]
	// insertMu: on FerretDB, this store's event inserts go one at a time
	// (events.go, insertEvent).
	insertMu sync.Mutex
}

// Follow implements driver.Feed: it starts the follower, one per store
// (its Client's).
func (f *feed) Follow(h driver.FeedHandler) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tail != nil || f.closed {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tailer{f: f, h: h, cancel: cancel, done: make(chan struct{}), openProc: "open:" + bson.NewObjectID().Hex()}
	t.pause.init(f.pauseFirst)
	f.tail = t
	go t.run(ctx)
	// The stream stops for good (Follow starts no other): what its end
	// deletes shares the deadline of the way out (closing.go).
	return func() {
		f.writer.beginClose()
		t.stop()
	}
}

// Replay implements driver.Feed: a stream that turns live replays the
// events kept, and on FerretDB events are trimmed trimSlack after a
// follower read them (trim.go). MongoDB keeps the newest eventsMaxDocs.
func (f *feed) Replay() time.Duration { return trimSlack }

// close stops the follower, if any, and waits for it; Follow starts none
// after it.
func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	t := f.tail
	f.mu.Unlock()
	if t != nil {
		t.stop()
	}
}

// publishedByUs reports whether proc names the process that publishes
// through this store.
func (f *feed) publishedByUs(proc string) bool {
	p := f.publishedBy.Load()
	return p != nil && *p == proc && proc != ""
}
