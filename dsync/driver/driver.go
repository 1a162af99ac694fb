// Package driver is the contract between dsync and the stores it runs on.
// A driver stores documents and decides nothing: dsync's protocol runs
// once, above it, in dsync.Client. The MongoDB driver is dsync/mongo; an
// in-memory one is dsync/driver/memory. A driver for another store
// implements Store (and, to wake waiters at once, Feed; for direct hints
// between processes, PeerStore) and passes the conformance suite in
// dsync/driver/drivertest.
//
// What a driver must guarantee is small, and stated with each method.
// What it may do, and the protocol copes with: apply an update as a read
// and a later write of the whole document; apply a delete as a read and a
// later delete by ID; apply any request long after its sender gave up on
// it, and after that sender's later requests. What it must never do:
// apply one insert twice, or let two inserts of one ID both succeed.
package driver

import (
	"context"
	"iter"
	"strconv"
	"time"
)

// Kinds of documents of a key's queue. The kinds and the IDs below are
// the engine's vocabulary, kept here because they are the contract's too:
// a driver's queries select by kind (gates, done records, the protocol
// document) and find a claim's end by its EndID.
const (
	// KindClaim is an epoch: a place in a key's queue, named by its session.
	KindClaim = "claim"
	// KindShadow is a claim's shadow: a document inserted with the claim,
	// in the same request, under an ID that names the claim's nonce
	// (ShadowID). A claim is inserted once and never sent again, so its
	// shadow exists only in a store that holds the claim.
	KindShadow = "shadow"
	// KindRelease ends an epoch whose owner held it.
	KindRelease = "release"
	// KindWithdraw ends an epoch whose owner gave it up before holding it,
	// or never knew whether its insert had been applied.
	KindWithdraw = "withdraw"
	// KindDead ends an epoch whose session another process proved expired
	// in the store's time.
	KindDead = "dead"
	// KindFloor is a floor document of an older dsync, which raised a
	// key's floor by inserting one. This one keeps a key's floor in its
	// gates (Doc.Floor), and reads no floor document.
	KindFloor = "floor"
	// KindGate names the segment of a key's queue that owns a bucket of
	// store time (GateID): of the segments that ever start, only one can
	// own a bucket, since the gate's ID is exclusive.
	KindGate = "gate"
	// KindProtocol is the store's one protocol document (ProtocolID): the
	// bucket length every process must agree on.
	KindProtocol = "protocol"
)

// KindDone is a key's done record (a dsync.Once whose function
// succeeded), with ID DoneID(key): inserted once, never updated, and
// with no epoch, so that the protocol never takes it for a claim.
const KindDone = "done"

// Mode is how a claim shares its key with others (see dsync.Client).
type Mode int

const (
	// Exclusive: holds when every lower claim has ended.
	Exclusive Mode = iota
	// Shared: holds when every lower exclusive claim has ended.
	Shared
	// Weighted: holds when the weights of the live lower claims plus its
	// own are at most the claim's limit.
	Weighted
)

// String names the mode: exclusive, shared, weighted.
func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	case Weighted:
		return "weighted"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Doc is a document of a key's queue: a claim, its shadow, or a marker
// that ends a claim.
type Doc struct {
	ID    string
	Key   string
	Epoch uint64
	Kind  string
	// Nonce is unique per claim insert (for a marker or a shadow: the
	// claim's). The protocol document's is unique per insert: it names
	// the store's history since it was last emptied; a gate's is the
	// protocol document's that its sender had read.
	Nonce   string
	Session string // the session of the claim (for a marker: of the claim it ends)
	Owner   string // claims only: the primitive that claimed
	// Sent is the latest possible store time when the document was sent.
	// A driver may keep times to the millisecond, rounding Sent up (it
	// must stay the latest possible) and the others as it likes: the
	// engine sends expiries already rounded up.
	Sent time.Time
	// Claims only: the session's TTL, and the expiry its owner had seen
	// confirmed when it claimed; zero in claims of an older dsync. For a
	// done record, Exp is when it may be forgotten (zero: never; see
	// Compact).
	TTL time.Duration
	Exp time.Time
	// Claims only: how the claim shares the key, its weight and the key's
	// limit (Weighted).
	Mode   Mode
	Weight int64
	Limit  int64
	// Claims only, shown to people (dsync status): the claiming process.
	Host string
	PID  int
	// Claims only: the history of the store (the nonce of its protocol
	// document, ProtocolID) in which its sender learnt the segment it
	// claims in; empty in claims of an older dsync. A claim that lands
	// after the store was emptied records the history before it.
	History string
	// Release markers only: the claim held with every lower claim ended
	// (always true of an exclusive claim), so nothing below it can keep a
	// later claim from holding.
	Clear bool

	// Done records only (KindDone): the fencing token (epoch) of the hold
	// whose run succeeded; the record's own Epoch is 0.
	Token uint64
	// Seg is the segment of the key's queue: for a claim, its segment's
	// first epoch (a claim with Epoch == Seg is the first of its
	// segment); for a gate, the segment it names. Zero in documents of an
	// older dsync.
	Seg uint64
	// Bucket is a gate's bucket of store time: the store times in
	// [Bucket×Span, (Bucket+1)×Span), Span being the protocol document's.
	Bucket int64
	// Span is the protocol document's bucket length.
	Span time.Duration
	// Floor is a gate's floor (zero: none): every epoch of the gate's
	// segment below Floor.Epoch has ended, and the claim of Floor.Epoch
	// was inserted with Floor.Nonce.
	Floor Floor
}

// GateID is the ID of the gate of key for bucket: one per (key, bucket),
// so that only one segment owns a bucket.
func GateID(key string, bucket int64) string {
	return key + "#g/" + strconv.FormatInt(bucket, 10)
}

// ProtocolID is the ID of the store's protocol document.
const ProtocolID = "#protocol"

// ClaimID is the ID of epoch's claim: unique per (key, epoch), so that only
// one insert of an epoch succeeds.
func ClaimID(key string, epoch uint64) string {
	return key + "@" + strconv.FormatUint(epoch, 10)
}

// EndID is the ID of the marker that ends the claim of epoch inserted with
// nonce. One marker per claim: whichever end is recorded first stands.
func EndID(key string, epoch uint64, nonce string) string {
	return ClaimID(key, epoch) + "~" + nonce
}

// DoneID is the ID of key's done record (KindDone). Claim IDs end in
// "@digits", markers in "~nonce", shadows in "#nonce" (a nonce is never
// "done"), so it is no other document's ID.
func DoneID(key string) string { return key + "#done" }

// ShadowID is the ID of the shadow of the claim of epoch inserted with
// nonce.
func ShadowID(key string, epoch uint64, nonce string) string {
	return ClaimID(key, epoch) + "#" + nonce
}

// Floor is a key's floor, recorded in its gates: every epoch below Epoch
// (of the segment Seg) has ended. Nonce is that of Epoch's claim.
type Floor struct {
	Epoch uint64
	Nonce string
	// Seg is the segment of Epoch's claim: a floor says nothing of other
	// segments. Zero in floors of an older dsync.
	Seg uint64
}

// Session is one document of a session: a lease that every claim naming it
// shares. A session starts as one document (generation 0) and gains
// another generation each time a renewal's outcome is unknown; its expiry
// is the highest of its documents'.
type Session struct {
	ID        string
	Gen       int       // the generation of the document (GetSession: of the one with the highest expiry)
	ExpiresAt time.Time // store time; only ever raised
	// HasFirst (GetSession): generation 0 was read. Expired without it, a
	// session may be back after a drop (a late insert): it counts as missing.
	HasFirst bool
}

// Interval is a range of possible store times.
type Interval struct {
	Earliest, Latest time.Time
}

// Store is what a driver provides. Every method may be called from many
// goroutines at once. Every error from a write other than ErrExists (and
// a duplicate within InsertOrdered) means its outcome is unknown. A
// method returns soon after its context ends, whatever the server does:
// the bounds of dsync's calls (a TryLock's, a release's) rest on it.
type Store interface {
	// Prepare makes the store ready to serve (indexes, the clock); it is
	// called before any other method but ServerTime, and again after it
	// failed, except before reads of a ReadPreparer, which are prepared
	// with PrepareRead instead. It must be cheap once it has succeeded.
	Prepare(ctx context.Context) error
	// ServerTime returns an interval that certainly contains the store's
	// clock now: the clock that orders the store's writes. Valid once
	// Prepare has succeeded; it does no I/O.
	ServerTime() Interval

	// Insert creates d, or returns ErrExists if d.ID exists. Of many
	// inserts of one ID, at most one succeeds.
	Insert(ctx context.Context, d Doc) error
	// InsertOrdered creates docs one after the other, in one request, and
	// stops at the first whose ID exists: dup is its index, or -1 if all
	// were created. Those before it were created, none after it.
	InsertOrdered(ctx context.Context, docs []Doc) (dup int, err error)
	// InsertEach creates each of docs whose ID does not exist, in one
	// request, each independently of the others (in any order): errs has
	// one entry per doc, nil if it was created, ErrExists if its ID
	// exists, or another error if its outcome is unknown. The engine sends
	// only gates through it (the coverage of every key a process holds,
	// in one request per bucket), so a store may send each again on a
	// transient failure, as it does an end marker.
	InsertEach(ctx context.Context, docs []Doc) (errs []error)
	// Get reads the document with the given ID; found is false if absent.
	Get(ctx context.Context, id string) (d Doc, found bool, err error)
	// Delete deletes the documents with the given IDs that exist, one
	// after the other in the order given, in one request. It may be
	// applied as a read and a later delete of each document; an error
	// means that any of them may be deleted, now or later.
	Delete(ctx context.Context, ids []string) error
	// RecentKeys returns the keys that have a gate of a bucket at or above
	// from: the keys in use. Its cost may grow with the documents stored:
	// only a sweeper calls it, once in a while.
	RecentKeys(ctx context.Context, from int64) ([]string, error)
	// Compact deletes every document sent before sentBefore (claims,
	// shadows, markers, floors, gates), but the protocol document, the
	// documents of the keys in keep, and the done records without an Exp
	// or with one at or after sentBefore, and returns how many it deleted. It
	// may cost a pass over the documents stored: it should be one. It may
	// be applied as a read and a later delete by ID, but for done records:
	// a done record's ID comes back when a Do after its expiry inserts it
	// again, so the store judges a done record by sentBefore when the
	// delete reaches it (a delete landing late must spare a record
	// inserted again since).
	Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error)
	// DropGates deletes the gates of buckets below below, of every key,
	// that were sent before sentBefore (their Sent): a drop landing late,
	// after the store was emptied and a process of another span recorded
	// gates whose bucket numbers lie below below, must spare them.
	DropGates(ctx context.Context, below int64, sentBefore time.Time) error
	// PutKeys records keys in the store's directory of keys, which
	// ListKeys reads, in one request where the store can (a process that
	// claims thousands of new keys records them in batches). Recording a
	// key already recorded, or twice in one call, is not an error, and
	// changes nothing. On an error, any of the keys may have been
	// recorded: the caller puts them all again. The directory is apart
	// from the keys' documents: a key is listed whether or not the store
	// holds documents of it, and entries are never removed but by an
	// operator.
	PutKeys(ctx context.Context, keys []string) error
	// HasKey reports whether key is recorded in the directory.
	HasKey(ctx context.Context, key string) (bool, error)
	// ListKeys streams the keys of the directory that q selects, each
	// once, in the store's order (KeyOrder), reading them from the store
	// a batch at a time as the caller goes on, so that a listing's memory
	// and its first key's latency do not grow with the directory. A key
	// recorded while a listing runs may be listed or not. An error ends
	// the listing: it is yielded with an empty key. A query the store
	// cannot serve (KeyQuery.After on a store of OrderFirstUse) yields an
	// error wrapping ErrAfterUnsupported, before any I/O.
	ListKeys(ctx context.Context, q KeyQuery) iter.Seq2[string, error]
	// KeyOrder is the order in which ListKeys lists keys. Valid once
	// Prepare has succeeded (a store may learn it from the server).
	KeyOrder() KeyOrder

	// InsertSession creates generation s.Gen of session s.ID, or returns
	// ErrExists if it exists.
	InsertSession(ctx context.Context, s Session) error
	// RenewSession raises the expiry of generation gen of session id to at
	// least expires (never lowers it); found is false if that document
	// does not exist (it creates nothing).
	RenewSession(ctx context.Context, id string, gen int, expires time.Time) (found bool, err error)
	// GetSession reads every generation of a session and returns the one
	// with the highest expiry, and HasFirst; found is false if none.
	GetSession(ctx context.Context, id string) (s Session, found bool, err error)

	// Close releases what the store holds (goroutines, cursors); it does
	// not close the connection it was given.
	Close() error
}

// EventKind is the kind of a wake-up hint.
type EventKind int

const (
	// Waiting: a process waits for the claim of Key's Epoch to end, until
	// the store time Until (it announces again before then if it still
	// waits).
	Waiting EventKind = iota + 1
	// Ended: the claim of Key's Epoch ended.
	Ended
	// Held: the claim of Key's Epoch had not ended when its owner sent
	// this, and its owner sends another within the poll interval while
	// it has not ended. Until, if not zero, is the highest expiry of the
	// claim's session that the store had confirmed to its owner (store
	// time): the session's stored expiry is at least that. Only direct
	// hints (package dsync/hint) carry it, to the processes that
	// announced they wait for that claim: a store's feed is never asked
	// to publish it.
	Held
)

// Event is a wake-up hint between processes. Hints may be lost,
// duplicated, late or reordered: queues never depend on them, only
// latency does.
type Event struct {
	Kind  EventKind
	Key   string
	Epoch uint64
	Until time.Time
	// Own: for Waiting, the epoch of the waiter's own claim of Key, 0 if
	// not told (an older dsync). If the waiter gives that claim up, an
	// Ended for it follows: the wait ended with it.
	Own uint64
	// Need: for Waiting, how many ends, at least, of the claims the
	// waiter waits for (this one's among them) it must hear of before
	// it may hold: 1 if this claim's end may be all it lacks, more if it
	// only counts it (a Semaphore's waiter short of several units); 0 if
	// not told (an older dsync). The owner of the claim sends its end to
	// the others a little later than to those that may hold on it. Only
	// direct hints (package dsync/hint) carry it: a store's feed need not.
	// A hint like any other: a wrong Need costs latency, never a grant.
	Need uint64
	// Proc names the publishing process (its Client); a follower ignores
	// its own events.
	Proc string
}

// Feed is what a store that can carry wake-up hints between processes
// provides, besides Store. Its events go to every follower.
type Feed interface {
	// Follow adds a follower, until stop is called, and reports to h from
	// one goroutine at a time. A Client follows once, and calls stop when
	// it is closed (before it closes the store).
	Follow(h FeedHandler) (stop func())
	// Publish sends an event to the other processes.
	Publish(ctx context.Context, e Event) error
	// Replay is how long after an event was published a follower whose
	// stream turns live still receives it: events published that long
	// before Live are delivered too.
	Replay() time.Duration
}

// A FeedPauser is a Feed whose follower can stop reading the store for
// a while, when events reach the process another way (direct hints):
// while paused, following costs the store nothing and no event is
// delivered; once resumed, the stream turns live again (Live) as if it
// had been down meanwhile.
type FeedPauser interface {
	Pause(paused bool)
}

// FeedHandler receives what a feed follows.
type FeedHandler interface {
	// Live: the stream is live from now on, the gen-th time: every event
	// published from now on will be delivered (and those published less
	// than Replay before). A Live may follow the last with no Down between
	// (a stream that failed and was reopened at once): events published
	// in between, longer than Replay before, may have been missed, as
	// across a Down.
	Live(gen uint64)
	// Down: the stream stopped; events may be missed until the next Live.
	// off: it will never be live (the store cannot carry events).
	Down(err error, off bool)
	// Event: an event another process published.
	Event(e Event)
}

// RunReader is what a store that can read a stretch of a key's queue in
// one request provides, besides Store. With it, a walk down a queue of many
// live claims (readers of an RWMutex, units of a Semaphore) costs a request
// or two, not two per claim; without it, dsync reads the claims and their
// markers one by one (Get).
type RunReader interface {
	// GetRun returns key's claims (KindClaim) of epochs from from to to,
	// both included, and their end markers (KindRelease, KindWithdraw,
	// KindDead), in increasing order of epoch, each claim before its
	// markers: one request where the epochs have as many digits (their
	// IDs then sort as their epochs do). It may return other documents of
	// those epochs too (shadows, markers of another nonce than the
	// claim's): the caller skips them.
	//
	// Each document returned was read no earlier than the ones before it
	// (a server reading an index in order does so; a store that reads
	// the whole run at one instant too), and none before the request was
	// sent. A document not returned was missing when the read passed its
	// place. The engine relies on the order: a run that ends with the
	// caller's own claim proves that claim still stored after everything
	// below it was read.
	//
	// A store whose server would answer a run by reading far more than
	// the run (FerretDB 1.24 decodes a whole collection for a find by an
	// _id range, an _id $in list or anything but {_id: value} on SQLite)
	// answers ErrRunsUnsupported, before any I/O: dsync then reads by ID,
	// and stops asking.
	GetRun(ctx context.Context, key string, from, to uint64) ([]Doc, error)
}

// KeyChecker is what a store whose keys have limits provides: CheckKey
// refuses a key it cannot store, before any I/O.
type KeyChecker interface {
	CheckKey(key string) error
}

// KeyQuery selects the keys of a listing (Store.ListKeys).
type KeyQuery struct {
	// Prefix: only keys that begin with it; "" selects every key.
	Prefix string
	// After: only keys that come after it in the store's order; "" starts
	// at the first key. Only a store of OrderBytes can resume a listing
	// after a key (it need not be recorded itself).
	After string
	// Limit: at most this many keys; 0 lists every key selected. It must
	// not be negative.
	Limit int
}

// KeyOrder is the order in which a store lists its keys.
type KeyOrder int

const (
	// OrderBytes lists keys in increasing order of their bytes (as
	// bytes.Compare orders them), and can resume after any key.
	OrderBytes KeyOrder = iota + 1
	// OrderFirstUse lists keys in the order they were first recorded
	// (PutKeys): a stable order, since entries are never updated or
	// removed, in which keys recorded later come later. A store lists
	// them in this order when reading any other order would cost it a
	// read of its whole directory (FerretDB). It cannot resume after a
	// key: a query with After fails with ErrAfterUnsupported.
	OrderFirstUse
)

func (o KeyOrder) String() string {
	switch o {
	case OrderBytes:
		return "bytes"
	case OrderFirstUse:
		return "first use"
	}
	return "KeyOrder(" + strconv.Itoa(int(o)) + ")"
}
