package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
)

// MaxKeyLen is the longest key accepted, in bytes. Lock documents are
// indexed by key, and older MongoDB versions limit an index key to 1024
// bytes.
const MaxKeyLen = 512

// maxOwnerLen bounds owner ids (dsync uses 20-character xids).
const maxOwnerLen = 256

const (
	// maxRounds bounds the rounds (a look or an insert) of one Acquire
	// that keeps losing the race for a free epoch.
	maxRounds = 4
	// maxSteps bounds the epochs one look reads by _id before it falls
	// back to a newest-first read.
	maxSteps = 3
	// retrySoon is the wait a HeldError suggests after lost races on a
	// free key: the winner has just inserted, someone may release soon.
	retrySoon = 5 * time.Millisecond
	// maxRenewBatch bounds the ids of one renewal command, keeping it well
	// under the 16 MiB command size limit even with MaxKeyLen keys.
	maxRenewBatch = 10000
	// releaseAttempts bounds the tries of one release that the server
	// answers with an error. A failed release leaves the key blocked
	// until the TTL runs out.
	releaseAttempts = 3
)

var _ dsync.Backend = (*Backend)(nil)

// Backend is a dsync.Backend over a MongoDB database. Create it with New.
// It is safe for concurrent use; one Backend per process and database is
// the intended use, shared by all its Mutexes, so that their renewals
// share one command per interval.
type Backend struct {
	db   *mongo.Database
	coll *mongo.Collection
	cfg  *config

	views  views
	marks  marks
	unsure unsure // epochs with a renewal of unknown outcome

	// sem serializes preparation (index creation, estimator start) and
	// Close, while letting a waiting caller give up when its ctx ends.
	sem     chan struct{}
	indexed bool // guarded by sem
	est     atomic.Pointer[clockcheck.Estimator]
	closed  atomic.Bool

	events *mongo.Collection // wake-up events (events.go)
	wake   *wakeups
}

// New returns a backend storing locks in db (collection DefaultCollection
// unless WithCollection says otherwise). It does no I/O: the index is
// created, and the server's clock measured, by the first call that needs
// them, with that call's context; a failure is returned to that call and
// retried by the next.
func New(db *mongo.Database, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, ErrNilDatabase
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	// Reads go to the primary, at read concern local: a secondary's or a
	// majority snapshot's view may lag by more than viewTrust.
	coll := db.Collection(cfg.collection, options.Collection().
		SetWriteConcern(cfg.wc).
		SetReadPreference(readpref.Primary()).
		SetReadConcern(readconcern.Local()))
	// The clock that matters is the primary's, which orders the writes.
	primary := db.Client().Database(db.Name(), options.Database().SetReadPreference(readpref.Primary()))
	b := &Backend{db: primary, coll: coll, cfg: cfg, sem: make(chan struct{}, 1)}
	b.events = primary.Collection(cfg.collection+eventsSuffix, options.Collection().SetWriteConcern(cfg.wc))
	b.wake = newWakeups(b)
	return b, nil
}

// Close stops the goroutine that keeps the server-time estimate current,
// and the one that follows wake-up events (WithWakeups), waiting for it.
// Calls made afterwards return ErrClosed; Mutexes still using the backend
// lose their holds when renewals fail. It does not disconnect the client.
// Close is idempotent and returns nil.
func (b *Backend) Close() error {
	b.sem <- struct{}{}
	defer func() { <-b.sem }()
	b.closed.Store(true)
	b.wake.stop()
	if e := b.est.Load(); e != nil {
		return e.Close()
	}
	return nil
}

// epochDoc is a lock document: one epoch of a key.
type epochDoc struct {
	ID         string    `bson:"_id"` // docID(key, epoch)
	Key        string    `bson:"key"`
	Epoch      int64     `bson:"epoch"`
	Owner      string    `bson:"owner"`
	Host       string    `bson:"host"`
	PID        int       `bson:"pid"`
	AcquiredAt time.Time `bson:"acquiredAt"`
	ExpiresAt  time.Time `bson:"expiresAt"`
	Released   bool      `bson:"released"`
}

// docID is the _id of an epoch document. The epoch is the digits after the
// last '@', so distinct (key, epoch) pairs give distinct ids, and the _id
// index alone already lets only one insert of an epoch succeed.
func docID(key string, epoch uint64) string {
	return key + "@" + strconv.FormatUint(epoch, 10)
}

// Acquire makes one attempt to create the next epoch of key for owner,
// valid for ttl after the request was sent; see dsync.Backend.
//
// A successful insert of epoch E+1 counts only if E was then the newest
// epoch, and E was released or had expired in server time. That is known
// in one of two ways:
//
//   - before the insert, from a view learned less than viewTrust ago (a
//     newest-first read, or this process's own insert or release of E),
//     with the insert's reply arriving within acquireWindow (timing.go).
//     Expiry counts only if E's expiresAt was before the earliest possible
//     server time when the view's read was sent: judging it as of the
//     insert instead would override a renewal the holder made in between,
//     and counts.
//   - after the insert, for a released E >= 2: a read by _id after the
//     insert finds E still present and released (timing.go, "Proof after
//     the insert").
//
// A duplicate-key error means another process won the epoch.
//
// Costs: one insert right after this process released the key (or for a
// key that never had an epoch). A waiter re-checks the epoch it waits on
// with one read by _id per attempt; when it finds it released, it reads
// the next one, and if that is absent, inserts it and reads the released
// one once more: four commands for a handoff. A waiter named by a
// wake-up event (WithWakeups) skips the two reads before the insert.
func (b *Backend) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (dsync.Lease, error) {
	if err := checkKey(key); err != nil {
		return dsync.Lease{}, err
	}
	if err := checkOwner(owner); err != nil {
		return dsync.Lease{}, err
	}
	if ttl <= 0 {
		return dsync.Lease{}, fmt.Errorf("dsyncmongo: TTL must be positive, got %v", ttl)
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return dsync.Lease{}, err
	}

	v, ok := b.views.get(key)
	if !ok {
		// Nothing known about key: try epoch 1 without reading. Epoch 1 is
		// never pruned, so the insert succeeds only if the key has no epoch
		// at all (timing.go); otherwise the duplicate-key error leads to a
		// read. A process locking many fresh keys saves a read per key.
		v = view{newest: true, known: true, learned: b.mono()}
	}
	if b.cfg.wakeups {
		if left := b.wake.yieldLeft(key); left > 0 {
			// We named another process the next holder when we released
			// the key: its turn first.
			return dsync.Lease{}, &dsync.HeldError{Key: key, Token: v.epoch, RetryAfter: left}
		}
	}
	for range maxRounds {
		var (
			lease dsync.Lease
			err   error
		)
		switch {
		case v.trusted(b.mono(), b.cfg.viewTrust):
			lease, err = b.insert(ctx, est, key, owner, ttl, v, false)
		case v.provable() && v.nextAbsent && b.mono()-v.learned < b.cfg.viewTrust:
			lease, err = b.insert(ctx, est, key, owner, ttl, v, true)
		default:
			if v, err = b.look(ctx, est, key, owner, v); err != nil {
				return dsync.Lease{}, err
			}
			b.views.put(key, v)
			switch {
			case v.free() || v.provable() && v.nextAbsent:
			case !v.newest || v.owner != owner:
				return dsync.Lease{}, b.held(est, key, v)
			default:
				// Our own epoch, left by an attempt whose outcome was
				// unknown (the caller does not count it). Release it, so
				// that the hold we grant now has a token of its own. The
				// newest-first read still shows that it is the newest.
				if err := b.release(ctx, est, key, v.epoch); err != nil {
					return dsync.Lease{}, fmt.Errorf("dsyncmongo: acquire %q: releasing own epoch %d: %w", key, v.epoch, err)
				}
				v.released = true
			}
			continue
		}
		switch {
		case err == nil:
			if b.cfg.wakeups {
				// A holder follows the events to learn of waiters it
				// should tell about its release.
				b.wake.start(est)
			}
			return lease, nil
		case mongo.IsDuplicateKeyError(err):
			// Lost the race: E+1 exists, we know nothing more.
			v = view{epoch: v.epoch + 1, learned: b.mono()}
		case errors.Is(err, errStaleView):
			v.newest = false // look again
		default:
			return dsync.Lease{}, err
		}
	}
	return dsync.Lease{}, &dsync.HeldError{Key: key, RetryAfter: jitter(retrySoon)}
}

// look learns what Acquire needs to decide on key, starting from the last
// view. While it can, it reads by _id, because FerretDB answers every other
// query by decoding the whole collection: the epoch last seen, to find it
// still held by another owner, or released; then the next one, to find it
// held, or absent (then the caller inserts it and proves the insert, see
// timing.go). Reading the next epoch first keeps waiters from inserting
// in vain when someone else has already taken the key. Otherwise it reads
// the newest epoch.
func (b *Backend) look(ctx context.Context, est *clockcheck.Estimator, key, owner string, last view) (view, error) {
	e, released := last.epoch, last.known && last.released
	for range maxSteps {
		if e == 0 {
			break
		}
		if !released {
			p, found, err := b.readEpoch(ctx, est, key, e)
			switch {
			case err != nil:
				return view{}, err
			case found && p.heldByOther(owner):
				return p, nil
			case !found || !p.provable():
				return b.readNewest(ctx, est, key) // expired, our own, or epoch 1
			}
		} else if e < 2 {
			break
		}
		next, found, err := b.readEpoch(ctx, est, key, e+1)
		switch {
		case err != nil:
			return view{}, err
		case !found:
			return view{epoch: e, known: true, released: true, nextAbsent: true, learned: next.learned}, nil
		case next.heldByOther(owner):
			return next, nil
		case !next.provable():
			return b.readNewest(ctx, est, key)
		}
		e++ // released: try the one after
	}
	return b.readNewest(ctx, est, key)
}

// errStaleView: the view became too old to insert on before the insert
// was sent.
var errStaleView = errors.New("stale view")

// errUnproven: an insert succeeded, but the read after it did not show
// that the epoch before it was the newest.
var errUnproven = errors.New("dsyncmongo: acquire: the new epoch is not proven the newest (the released one before it was pruned), so it does not count")

// insert creates epoch v.epoch+1 for owner: on the strength of v if it is
// a trusted newest view, or, with prove, proving afterwards that v's
// released epoch was the newest (timing.go). A duplicate-key error is
// returned unwrapped for Acquire to recognize.
func (b *Backend) insert(ctx context.Context, est *clockcheck.Estimator, key, owner string, ttl time.Duration, v view, prove bool) (dsync.Lease, error) {
	epoch := v.epoch + 1
	sent := b.mono()
	if !prove && sent-v.learned >= b.cfg.viewTrust { // rule (a)
		return dsync.Lease{}, errStaleView
	}
	now := est.Now()
	doc := epochDoc{
		ID:         docID(key, epoch),
		Key:        key,
		Epoch:      int64(epoch),
		Owner:      owner,
		Host:       b.cfg.host,
		PID:        b.cfg.pid,
		AcquiredAt: midpoint(now),
		ExpiresAt:  ceilMilli(now.Latest.Add(ttl)),
	}
	_, err := b.coll.InsertOne(ctx, doc)
	replied := b.mono()
	if mongo.IsDuplicateKeyError(err) {
		return dsync.Lease{}, err
	}
	if err != nil {
		b.views.forget(key)
		return dsync.Lease{}, b.wrap(ctx, "acquire", key, err)
	}
	// The epoch is never released here when it does not count: it may lie
	// in a hole left by pruning, and a released epoch must never be such
	// junk (timing.go). It expires after ttl; if it is the newest, the
	// owner's next attempt releases it.
	if took := replied - sent; !prove && took >= b.cfg.acquireWindow { // rule (b)
		if !v.provable() {
			b.views.forget(key)
			err := fmt.Errorf("%w: %q: epoch %d acknowledged after %v, the limit is %v",
				ErrSlowReply, key, epoch, took, b.cfg.acquireWindow)
			b.cfg.logger.Warn("dsyncmongo: slow acquire reply", slog.String("key", key), slog.Any("err", err))
			return dsync.Lease{}, err
		}
		prove = true // the proof after the insert needs no timing
	}
	if prove {
		again, found, err := b.readEpoch(ctx, est, key, v.epoch)
		if err != nil {
			b.views.forget(key)
			return dsync.Lease{}, err
		}
		if !found || !again.released {
			b.views.forget(key)
			b.cfg.logger.Warn("dsyncmongo: new epoch not proven newest", slog.String("key", key), slog.Uint64("epoch", epoch))
			return dsync.Lease{}, errUnproven
		}
	}
	b.views.put(key, view{
		epoch: epoch, newest: true, known: true, owner: owner,
		expiresAt: doc.ExpiresAt, learned: sent,
	})
	if epoch%b.cfg.pruneEvery == 0 {
		b.marks.note(key, mark{epoch: epoch, confirmed: replied})
	}
	if due, ok := b.marks.ripe(key, replied, b.cfg.pruneDelay); ok {
		b.prune(ctx, key, due.epoch)
	}
	return dsync.Lease{Key: key, Owner: owner, Token: epoch}, nil
}

// prune deletes the epochs of key below the given one, which this process
// created pruneDelay or more ago (timing.go, rule c), except epoch 1 (see
// Acquire). Best effort: errors are only logged.
func (b *Backend) prune(ctx context.Context, key string, below uint64) {
	// Epoch 1 stays: see Acquire.
	res, err := b.coll.DeleteMany(ctx, bson.D{
		{Key: "key", Value: key},
		{Key: "epoch", Value: bson.D{{Key: "$gt", Value: 1}, {Key: "$lt", Value: int64(below)}}},
	})
	if err != nil {
		b.cfg.logger.Warn("dsyncmongo: pruning old epochs failed", slog.String("key", key), slog.Uint64("below", below), slog.Any("err", err))
		return
	}
	b.cfg.logger.Debug("dsyncmongo: pruned", slog.String("key", key), slog.Uint64("below", below), slog.Int64("deleted", res.DeletedCount))
}

// held builds the HeldError for a view of another owner's hold: wait until
// its epoch can have expired in server time, at most the poll interval.
func (b *Backend) held(est *clockcheck.Estimator, key string, v view) error {
	wait, poll := b.cfg.poll, b.cfg.poll
	if v.known {
		// Until answers "when is Earliest at or after"; a millisecond more
		// makes it strictly after.
		if u := est.Until(v.expiresAt); u < poll-time.Millisecond {
			wait = u + time.Millisecond
		}
	}
	return &dsync.HeldError{Key: key, Owner: v.owner, Token: v.epoch, RetryAfter: jitterWait(wait, poll)}
}

// jitterWait spreads waiters: a wait capped by the poll interval varies by
// ±20%; a shorter wait (until expiry) only grows, by up to 20%, so as not
// to wake before the expiry it waits for.
func jitterWait(wait, poll time.Duration) time.Duration {
	if wait < poll {
		return max(wait+time.Duration(rand.Int64N(int64(wait)/5+1)), time.Millisecond)
	}
	return jitter(poll)
}

// jitter returns d ± 20%, at least 1 ms.
func jitter(d time.Duration) time.Duration {
	return max(d*4/5+time.Duration(rand.Int64N(int64(d)*2/5+1)), time.Millisecond)
}

// readNewest reads the newest epoch of key.
func (b *Backend) readNewest(ctx context.Context, est *clockcheck.Estimator, key string) (view, error) {
	sent := b.mono()
	earliest := est.Now().Earliest
	var d epochDoc
	err := b.coll.FindOne(ctx, bson.D{{Key: "key", Value: key}},
		options.FindOne().SetSort(bson.D{{Key: "epoch", Value: -1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return view{newest: true, known: true, learned: sent}, nil
	}
	if err != nil {
		return view{}, b.wrap(ctx, "read", key, err)
	}
	return viewOf(&d, true, earliest, sent), nil
}

// readEpoch reads one epoch of key by _id. It reports found=false if the
// epoch does not exist (any more); v.learned is set either way.
func (b *Backend) readEpoch(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) (v view, found bool, err error) {
	sent := b.mono()
	earliest := est.Now().Earliest
	var d epochDoc
	// Exactly {_id: <string>}: the one filter FerretDB answers by key
	// rather than by decoding every document of the collection.
	err = b.coll.FindOne(ctx, bson.D{{Key: "_id", Value: docID(key, epoch)}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return view{epoch: epoch, learned: sent}, false, nil
	}
	if err != nil {
		return view{}, false, b.wrap(ctx, "read", key, err)
	}
	return viewOf(&d, false, earliest, sent), true, nil
}

func viewOf(d *epochDoc, newest bool, earliest time.Time, learned time.Duration) view {
	return view{
		epoch:     uint64(d.Epoch),
		newest:    newest,
		known:     true,
		owner:     d.Owner,
		released:  d.Released,
		expired:   d.ExpiresAt.Before(earliest),
		expiresAt: d.ExpiresAt,
		learned:   learned,
	}
}

// Renew extends every lease in one updateMany command (per maxRenewBatch
// leases): each unreleased, not provably expired epoch among them gets
// expiresAt = the latest possible server time at sending + ttl. When not
// all matched, one more read tells which did. A lease whose epoch is
// released, expired or gone is reported false: it is no longer held.
// Like Release, Renew trusts its argument: pass only leases that Acquire
// returned.
func (b *Backend) Renew(ctx context.Context, ttl time.Duration, leases []dsync.Lease) ([]bool, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("dsyncmongo: TTL must be positive, got %v", ttl)
	}
	applied := make([]bool, len(leases))
	if len(leases) == 0 {
		return applied, nil
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return nil, err
	}
	// Leases sharing an epoch (a caller's duplicates) share a result.
	at := make(map[string][]int, len(leases))
	ids := make([]string, 0, len(leases))
	for i, l := range leases {
		if checkKey(l.Key) != nil || l.Token == 0 || l.Token > 1<<63-1 {
			continue // never granted, so certainly not extended
		}
		id := docID(l.Key, l.Token)
		if _, dup := at[id]; !dup {
			ids = append(ids, id)
		}
		at[id] = append(at[id], i)
	}
	for len(ids) > 0 {
		n := min(len(ids), maxRenewBatch)
		if err := b.renew(ctx, est, ttl, ids[:n], at, leases, applied); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	return applied, nil
}

func (b *Backend) renew(ctx context.Context, est *clockcheck.Estimator, ttl time.Duration, ids []string, at map[string][]int, leases []dsync.Lease, applied []bool) error {
	now := est.Now()
	expires := ceilMilli(now.Latest.Add(ttl))
	filter := bson.D{
		{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}},
		{Key: "released", Value: false},
		// Refuse to revive an epoch that may have been taken over, as far
		// as the store can: the filter is evaluated when the command is
		// applied, which may be long after it was sent (timing.go, "Late
		// writes"), and then it no longer protects anything.
		{Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: now.Earliest}}},
	}
	// $max, never $set: a renewal applied late, after later renewals of
	// the same epoch, must not move its expiry back (timing.go, rule L1).
	res, err := b.coll.UpdateMany(ctx, filter, bson.D{{Key: "$max", Value: bson.D{{Key: "expiresAt", Value: expires}}}})
	if err != nil {
		// The outcome is unknown, and the command may still be applied at
		// any later time: stop trusting what this process knows of these
		// epochs, and have their release check that it was not undone
		// (timing.go, rule L4).
		for _, id := range ids {
			l := leases[at[id][0]]
			b.views.forget(l.Key)
			b.unsure.note(id)
		}
		return b.wrap(ctx, "renew", leases[at[ids[0]][0]].Key, err)
	}
	// What the reply can teach the view cache is judged at its arrival:
	// the latest server time it can have been applied at.
	repliedLatest := est.Now().Latest
	ok := func(string) bool { return true }
	if res.MatchedCount != int64(len(ids)) {
		// Which ones? Ours carry our expiresAt or a later one (a renewal
		// of our own racing this one), and are not released.
		cur, err := b.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
			options.Find().
				SetProjection(bson.D{{Key: "released", Value: 1}, {Key: "expiresAt", Value: 1}}).
				SetBatchSize(int32(len(ids)))) // one round trip
		if err != nil {
			return b.wrap(ctx, "renew", leases[at[ids[0]][0]].Key, err)
		}
		var docs []epochDoc
		if err := cur.All(ctx, &docs); err != nil {
			return b.wrap(ctx, "renew", leases[at[ids[0]][0]].Key, err)
		}
		extended := make(map[string]bool, len(docs))
		for _, d := range docs {
			extended[d.ID] = !d.Released && !d.ExpiresAt.Before(expires)
		}
		ok = func(id string) bool { return extended[id] }
	}
	for _, id := range ids {
		if !ok(id) {
			continue
		}
		for _, i := range at[id] {
			applied[i] = true
		}
		l := leases[at[id][0]]
		b.views.update(l.Key, l.Token, func(v *view) {
			// Only a reply that arrived before the expiry the view knew
			// proves the epoch never lapsed before the renewal applied
			// (so nobody took it over meanwhile): the stored expiry only
			// grows, and stayed ahead of the server's clock throughout.
			// A later reply may come from a renewal that revived an epoch
			// someone else has since superseded (timing.go, rule L3).
			if repliedLatest.Before(v.expiresAt) && expires.After(v.expiresAt) {
				v.expiresAt = expires
			}
		})
	}
	return nil
}

// Release marks the lease's epoch released, and lowers its expiresAt to
// the latest possible server time now (so pruning can collect it soon).
// Releasing an epoch that is already released, superseded or pruned
// changes nothing for anyone else. Release trusts its argument: pass only
// leases that Acquire returned.
func (b *Backend) Release(ctx context.Context, lease dsync.Lease) error {
	if err := checkKey(lease.Key); err != nil {
		return err
	}
	if lease.Token == 0 || lease.Token > 1<<63-1 {
		return fmt.Errorf("dsyncmongo: release %q: invalid token %d", lease.Key, lease.Token)
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return err
	}
	if err := b.release(ctx, est, lease.Key, lease.Token); err != nil {
		return err
	}
	if b.cfg.wakeups {
		b.wake.released(ctx, est, lease.Key, lease.Token)
	}
	return nil
}

func (b *Backend) release(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) error {
	var (
		sent   time.Duration
		latest time.Time
		err    error
	)
	for attempt := range releaseAttempts {
		if attempt > 0 {
			select {
			case <-time.After(jitter(time.Duration(attempt) * 20 * time.Millisecond)):
			case <-ctx.Done():
				return b.wrap(ctx, "release", key, err)
			}
		}
		sent = b.mono()
		latest = est.Now().Latest
		err = b.markReleased(ctx, key, epoch)
		// Retry only when the server answered with an error (FerretDB
		// reports concurrent writes as SQLITE_BUSY); the update is
		// idempotent. A network error is left to the caller.
		var se mongo.ServerError
		if err == nil || !errors.As(err, &se) {
			break
		}
	}
	if err == nil && b.unsure.take(docID(key, epoch)) {
		err = b.confirmReleased(ctx, est, key, epoch)
	}
	if err != nil {
		b.views.forget(key)
		return b.wrap(ctx, "release", key, err)
	}
	b.views.released(key, epoch, latest, sent)
	return nil
}

// confirmReleased reads back an epoch whose renewal had an unknown
// outcome, and releases it again while it reads unreleased. FerretDB
// applies an update by rewriting the whole document, so such a renewal,
// applied late but at the same moment as the release, can write the
// document back unreleased: the key would then stay blocked until the
// renewed expiry (timing.go, rule L4). Liveness only: an unreleased epoch
// of ours blocks others, never lets them in.
func (b *Backend) confirmReleased(ctx context.Context, est *clockcheck.Estimator, key string, epoch uint64) error {
	for range releaseAttempts {
		v, found, err := b.readEpoch(ctx, est, key, epoch)
		if err != nil {
			return err
		}
		if !found || v.released {
			return nil
		}
		b.cfg.logger.Warn("dsyncmongo: a late renewal undid a release; releasing again", slog.String("key", key), slog.Uint64("epoch", epoch))
		if err := b.markReleased(ctx, key, epoch); err != nil {
			return err
		}
	}
	return nil
}

// markReleased sends the update that releases an epoch. It filters on _id
// alone: only the owner writes this document, and it is the one filter
// FerretDB answers without decoding the collection. The expiry is left as
// it is: it only ever grows (timing.go, rule L1), and a released epoch is
// over whatever it says. Applied late or twice, it ends an epoch its owner
// had already stopped using.
func (b *Backend) markReleased(ctx context.Context, key string, epoch uint64) error {
	_, err := b.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: docID(key, epoch)}}, bson.D{
		{Key: "$set", Value: bson.D{{Key: "released", Value: true}}},
	})
	return err
}

// LockInfo describes the newest epoch of a key: who holds or last held it,
// and until when.
type LockInfo struct {
	Key   string
	Token uint64 // the epoch; larger than every earlier hold's
	Owner string // the owner id the holder's Mutex acquired with
	Host  string
	PID   int
	// AcquiredAt is the holder's estimate of the server time when it sent
	// the acquire; ExpiresAt the server time at which the hold ends unless
	// renewed. A release ends it at once and leaves ExpiresAt as it was:
	// a stored expiry only ever grows.
	AcquiredAt time.Time
	ExpiresAt  time.Time
	Released   bool
	// Live reports whether the epoch was neither released nor provably
	// expired in server time when read.
	Live bool
}

// Current reads the newest epoch of key. It returns ErrNoLock (wrapped) if
// the key was never locked.
func (b *Backend) Current(ctx context.Context, key string) (LockInfo, error) {
	if err := checkKey(key); err != nil {
		return LockInfo{}, err
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return LockInfo{}, err
	}
	earliest := est.Now().Earliest
	var d epochDoc
	err = b.coll.FindOne(ctx, bson.D{{Key: "key", Value: key}},
		options.FindOne().SetSort(bson.D{{Key: "epoch", Value: -1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return LockInfo{}, fmt.Errorf("%w %q", ErrNoLock, key)
	}
	if err != nil {
		return LockInfo{}, b.wrap(ctx, "read", key, err)
	}
	return LockInfo{
		Key:        d.Key,
		Token:      uint64(d.Epoch),
		Owner:      d.Owner,
		Host:       d.Host,
		PID:        d.PID,
		AcquiredAt: d.AcquiredAt,
		ExpiresAt:  d.ExpiresAt,
		Released:   d.Released,
		Live:       !d.Released && !d.ExpiresAt.Before(earliest),
	}, nil
}

// prepare creates the index and the estimator on first use, and returns
// the estimator.
func (b *Backend) prepare(ctx context.Context) (*clockcheck.Estimator, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if e := b.est.Load(); e != nil {
		return e, nil
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-b.sem }()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if e := b.est.Load(); e != nil {
		return e, nil
	}
	if !b.indexed {
		// The unique (key, epoch) index serves newest-first reads and
		// pruning; the deterministic _id alone makes inserts exclusive.
		_, err := b.coll.Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys:    bson.D{{Key: "key", Value: 1}, {Key: "epoch", Value: 1}},
			Options: options.Index().SetUnique(true),
		})
		if err != nil {
			return nil, b.wrap(ctx, "create index on", b.cfg.collection, err)
		}
		b.indexed = true
	}
	opts := append([]clockcheck.Option{clockcheck.WithClock(b.cfg.clock), clockcheck.WithLogger(b.cfg.logger)}, b.cfg.estimator...)
	e, err := clockcheck.NewEstimator(ctx, b.db, opts...)
	if err != nil {
		return nil, fmt.Errorf("dsyncmongo: measuring the server's clock: %w", err)
	}
	b.est.Store(e)
	return e, nil
}

func (b *Backend) mono() time.Duration { return b.cfg.clock.Monotonic() }

// wrap prefixes a driver error with the operation and key, adding ctx's
// cause when the driver's error does not carry it.
func (b *Backend) wrap(ctx context.Context, op, key string, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("dsyncmongo: %s %q: %w: %w", op, key, cause, err)
	}
	return fmt.Errorf("dsyncmongo: %s %q: %w", op, key, err)
}

func checkKey(key string) error {
	switch {
	case key == "":
		return ErrEmptyKey
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrKeyTooLong, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

func checkOwner(owner string) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: empty", ErrInvalidOwner)
	case len(owner) > maxOwnerLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidOwner, len(owner), maxOwnerLen)
	case !utf8.ValidString(owner):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidOwner)
	}
	return nil
}

// ceilMilli rounds t up to BSON's millisecond resolution, so the stored
// expiry is never earlier than the computed one.
func ceilMilli(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		return r.Add(time.Millisecond).UTC()
	}
	return t.UTC()
}

func midpoint(iv clockcheck.Interval) time.Time {
	return iv.Earliest.Add(iv.Latest.Sub(iv.Earliest) / 2).Truncate(time.Millisecond).UTC()
}
