// Package driver is the contract between dsync and the stores it runs on.
// It is for writing a driver, not for using dsync.
//
// A driver stores documents and decides nothing: dsync's protocol runs
// once, above it, in dsync.Client. The MongoDB driver is dsync/mongo; an
// in-memory one is dsync/driver/memory. A driver for another store
// implements Store and passes the conformance suite in
// dsync/driver/drivertest.
//
// Store is what dsync needs on every claim and session: inserts, reads
// and deletes of a key's documents, a session's documents, the store's
// time. Everything else a store may serve is a role, which Store.Roles
// returns, nil where the store serves none: reading a run of a queue in
// one request (RunReader), the sweeper's deletes (Maintainer), the
// directory of keys (KeyDirectory), reads that write nothing
// (ReadPreparer), key limits (KeyChecker), wake-ups (Feed, FeedPauser),
// direct hints (PeerStore, LoopbackReporter), revocations (RevokeStore),
// a record of when the store was up (UptimeStore), and the records of
// deadlock detection between lock sets (WaitStore, DeadlockStore). dsync
// reaches a role only through Roles, never by a type assertion on the
// store, so a type that embeds a Store to wrap it passes every role on,
// and sees a role's calls only if it overrides Roles.
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

// Kinds of the documents of a read lane: a process's read holds of an
// RWMutex key, kept as slots under one shared claim of its own (the
// lane's root, a claim with Doc.Lane set), so that readers of one key do
// not race each other for its epochs. Each carries its root's Epoch and
// Nonce and its Slot (1 and up); their IDs (SlotID and the two after it)
// lie under the root's, so that a lane's documents never meet another
// claim's, nor another history's. Their kinds are none of a claim's or a
// marker's: a dsync that knows no lanes, and a run (RunReader), passes
// them by, and sees the root as the live shared claim it is until the
// root's own end marker. Package dsync/internal/queue/lanemodel states
// the protocol; this version of dsync writes none of them yet.
const (
	// KindSlot is a read hold: slot Slot of the lane of the claim Epoch,
	// inserted by the lane's process once the slot below it existed and
	// had ended. Its insert is its hold.
	KindSlot = "slot"
	// KindSlotShadow is a slot's shadow (SlotShadowID): inserted with the
	// slot, in the same request, as a claim's shadow is with its claim.
	KindSlotShadow = "slotshadow"
	// KindSlotEnd ends the read hold of a slot (SlotEndID): its process
	// let it go, or gave it up not knowing whether its insert landed.
	KindSlotEnd = "slotend"
	// KindSlotDead ends the read hold of a slot whose session another
	// process proved expired in the store's time (SlotEndID, as
	// KindSlotEnd: whichever lands first stands).
	KindSlotDead = "slotdead"
	// KindSeal closes a lane at a slot: a writer's document in the slot's
	// own ID (SlotID), which the lane's next read hold would have taken.
	// It names the writer's claim (SealEpoch, SealNonce), above which the
	// lane's process claims a new root.
	KindSeal = "seal"
)

// KindDone is a key's done record (a dsync.Once whose function succeeded),
// with ID DoneID(key). It is inserted once, never updated, and has no
// epoch, so that the protocol never takes it for a claim.
const KindDone = "done"

// Mode is how a claim shares its key with others (see dsync.Client).
type Mode int

const (
	// Exclusive: holds when every lower claim has ended.
	Exclusive Mode = iota
	// Shared: holds when every lower exclusive claim has ended.
	Shared
	// Weighted: holds when the live lower claims' weights plus its own
	// are at most its limit.
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

// Doc is a document of a key's queue. It is a claim, its shadow, a
// marker that ends a claim, or a document of a read lane (KindSlot).
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
	// Claims only: the outage grace the claim is to be judged with (see
	// UptimeStore); zero, as in claims of an older dsync, for a claim
	// judged by its session's expiry alone.
	Grace time.Duration
	// Claims only: how the claim shares the key, its weight and the key's
	// limit (Weighted).
	Mode   Mode
	Weight int64
	Limit  int64
	// Claims only, shown to people (dsync status): the claiming process.
	Host string
	PID  int
	// Claims only: the lock set the claim is a member of (its identity,
	// Wait.Set), or empty for a claim of a single primitive. Deadlock
	// detection follows the wait-for graph through claims with a Waiter
	// only.
	Waiter string
	// Claims only: the history of the store (the nonce of its protocol
	// document, ProtocolID) in which its sender learnt the segment it
	// claims in; empty in claims of an older dsync. A claim that lands
	// after the store was emptied records the history before it.
	History string
	// Claims only: the claim is the root of a read lane (KindSlot): a
	// shared claim whose read holds are its lane's slots. False in claims
	// of an older dsync.
	Lane bool
	// Documents of a lane (KindSlot, KindSlotShadow, KindSlotEnd,
	// KindSlotDead, KindSeal): the slot, 1 and up, of the lane rooted at
	// the claim Epoch inserted with Nonce. An end marker of a lane's root:
	// the lane's last slot, so that its extent is known to a prune that
	// deletes by ID. Zero elsewhere.
	Slot uint64
	// Seals only (KindSeal): the writer's claim that sealed the lane, its
	// epoch and nonce.
	SealEpoch uint64
	SealNonce string
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

// GateID is the ID of the gate of key for bucket. There is one per (key,
// bucket), so that only one segment owns a bucket.
func GateID(key string, bucket int64) string {
	return key + "#g/" + strconv.FormatInt(bucket, 10)
}

// ProtocolID is the ID of the store's protocol document.
const ProtocolID = "#protocol"

// ClaimID is the ID of epoch's claim. It is unique per (key, epoch), so
// that only one insert of an epoch succeeds.
func ClaimID(key string, epoch uint64) string {
	return key + "@" + strconv.FormatUint(epoch, 10)
}

// EndID is the ID of the marker ending the claim of epoch inserted with
// nonce. One marker per claim: whichever end is recorded first stands.
func EndID(key string, epoch uint64, nonce string) string {
	return ClaimID(key, epoch) + "~" + nonce
}

// DoneID is the ID of key's done record (KindDone). Claim IDs end in
// "@digits", markers in "~nonce", shadows in "#nonce" (a nonce is never
// "done"), a lane's slots in "/digits", their shadows in "#" and their
// end markers in "~", so it is no other document's ID.
func DoneID(key string) string { return key + "#done" }

// ShadowID is the ID of the shadow of the claim of epoch inserted with
// nonce.
func ShadowID(key string, epoch uint64, nonce string) string {
	return ClaimID(key, epoch) + "#" + nonce
}

// SlotID is the ID of slot of the lane rooted at the claim of epoch
// inserted with nonce: its read hold (KindSlot) or the seal that closed
// the lane there (KindSeal), whichever was inserted first.
func SlotID(key string, epoch uint64, nonce string, slot uint64) string {
	return ClaimID(key, epoch) + "/" + nonce + "/" + strconv.FormatUint(slot, 10)
}

// SlotShadowID is the ID of the shadow of a lane's slot (KindSlotShadow).
// A slot's ID is inserted once, so it needs no nonce of its own.
func SlotShadowID(key string, epoch uint64, nonce string, slot uint64) string {
	return SlotID(key, epoch, nonce, slot) + "#"
}

// SlotEndID is the ID of the marker that ends a slot's read hold
// (KindSlotEnd or KindSlotDead).
func SlotEndID(key string, epoch uint64, nonce string, slot uint64) string {
	return SlotID(key, epoch, nonce, slot) + "~"
}

// Floor is a key's floor, recorded in its gates. Every epoch below Epoch
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

// Store is what a driver provides: what dsync needs on every claim and
// session. The other parts of the contract it serves are its Roles. Every
// method may be called from many goroutines at once. Every error from a
// write other than ErrExists (and a duplicate within InsertOrdered) means
// its outcome is unknown. A method returns soon after its context ends,
// whatever the server does: the bounds of dsync's calls (a TryLock's, a
// release's) rest on it.
type Store interface {
	// Prepare makes the store ready to serve (indexes, the clock); it is
	// called before any other method but ServerTime and Roles, and again
	// after it failed, except before reads of a store with Roles.Reads,
	// which are prepared with PrepareRead instead. It must be cheap once
	// it has succeeded.
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

	// Roles returns the other parts of the contract that the store
	// serves, each nil where it serves none. It does no I/O, may be
	// called before Prepare, and returns the same every time.
	Roles() Roles

	// Close releases what the store holds (goroutines, cursors); it does
	// not close the connection it was given. Calls made after it may
	// fail with ErrClosed.
	Close() error
}
