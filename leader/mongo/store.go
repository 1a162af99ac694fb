// Package leadermongo is the MongoDB member store of package leader
// (leader.MemberStore).
// In tests without a server, use leadertest.NewMemoryMembers instead.
//
// Each candidate's status is kept in documents of its own (usually one)
// in a members collection, beside the locks of a dsyncmongo.Store. An
// election's lease is a lock of the process's dsync.Client, in the
// election namespace (operator.LockKey). So a process's locks and elections
// share one session and one renewal command per interval, and no plain
// lock is ever an election's lease. Package leader reads who leads from
// it.
//
//	store, err := dsyncmongo.NewStore(db) // collection "dsync_locks"
//	...
//	client, err := dsync.NewClient(store)
//	...
//	defer client.Close()
//	members, err := leadermongo.NewStore(store) // members in "dsync_members"
//	...
//	e, err := leader.NewElection(client, "scheduler", leader.WithMembers(members))
//	...
//	defer e.Close()
//	err = e.Run(ctx, func(lctx context.Context) error { ... })
//
// The package example is the complete program. Releases before leases
// shared the lock collection kept them in "dsync_elections": see
// Preflight for upgrading.
//
// The members collection is read and written like the lock collection,
// whatever the read preference and concerns of the database or client
// given to NewStore. Reads go to the primary, at read concern local.
// Writes use the lock store's write concern (dsyncmongo.WithWriteConcern;
// majority by default). ConfirmedMembers alone reads at read concern
// majority.
//
// A member's status is written only by its member (the process of its
// Election) and stamped with the server time its write was sent at, so a
// member's age is judged in server time like lease expiry. Members are
// listed live while their last heartbeat is younger than the age the
// caller gives, measured against the earliest server time the store can
// prove.
//
// # Late writes
//
// Like every write of dsync, a member write may be applied long after it
// was sent, after later writes of the same member. And FerretDB applies an
// update as a read and a later write of the whole document, so of two
// updates of one document applied at once the older can land last. So no
// member document is ever updated by two requests that may be in flight
// together. A member's writes are sent one at a time, each after the last
// one's reply (a write whose caller gives up waits no longer for its
// turn). Each carries a sequence number, higher than the member's earlier
// ones, and a time stamp: the latest possible server time at sending,
// never below an earlier write's. The first inserts the member's document,
// a generation "<election>/<member>~<n>". Later ones update it, by _id
// alone, so they land in the order they were sent. Once an update's
// outcome is unknown (an error, or its caller's context ended), it may
// still be applied at any time. So that document is never updated again:
// the member's next generation is inserted instead, by the same write if
// its context allows, else by the next. An insert of unknown outcome is
// sent again by the next write, with that write's state. It lands once at
// most, so once one is confirmed (or answered duplicate key) the
// generation is updated like the first. Once a write to a new generation
// is confirmed, the member's older generations are deleted (by a delete
// sent again after later writes until it is confirmed). Readers take,
// of a member's documents, the one with the highest sequence number. A
// late write to an older generation has a lower one and a stamp no later,
// so it changes neither the status read (leader flag, version...) nor the
// member's age.
//
// Closing an Election removes all its member's documents. An update that
// lands afterwards changes nothing (it never inserts). An insert that
// lands afterwards brings back a document with its old stamp. So the
// member is listed for at most the caller's age after that write was
// sent, and the document stays behind, unlisted.
package leadermongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
)

// DefaultMembersCollection holds the members' status documents.
const DefaultMembersCollection = "dsync_members"

// Store is a leader.MemberStore over a MongoDB database.
// Member status lives in a collection of its own, beside the locks of a
// dsyncmongo.Store. It shares that store's settings and server-time
// estimate. Create it with NewStore, one per process and database.
type Store struct {
	locks   *dsyncmongo.Store
	members *mongo.Collection
	legacy  legacyLeases

	indexOnce sync.Mutex
	indexed   bool

	writersMu sync.Mutex
	writers   map[string]*memberWriter // by memberID; dropped by DeleteMember
}

var (
	_ leader.MemberStore      = (*Store)(nil)
	_ leader.Preflighter      = (*Store)(nil)
	_ leader.ConfirmedMembers = (*Store)(nil)
)

// An Option configures a Store.
type Option func(*config) error

type config struct {
	members string
	legacy  string
}

// WithMembersCollection sets the collection of member status documents.
// Default: DefaultMembersCollection ("dsync_members").
func WithMembersCollection(name string) Option {
	return func(c *config) error {
		if err := checkCollection(name); err != nil {
			return err
		}
		c.members = name
		return nil
	}
}

// WithLegacyCollection names the collection where older releases kept the
// leadership leases.
// Those are the releases of dsync before leases shared the lock
// collection (their dsyncmongo.WithCollection through WithLockOptions).
// Default: LegacyCollection ("dsync_elections"). See Preflight.
func WithLegacyCollection(name string) Option {
	return func(c *config) error {
		if err := checkCollection(name); err != nil {
			return err
		}
		c.legacy = name
		return nil
	}
}

func checkCollection(name string) error {
	if name == "" || strings.ContainsAny(name, "$\x00") || strings.HasPrefix(name, "system.") {
		return fmt.Errorf("leadermongo: invalid collection name %q", name)
	}
	return nil
}

// NewStore returns a member store beside locks, the process's dsyncmongo
// store.
// Member status goes in a collection of locks's database. It does no I/O.
func NewStore(locks *dsyncmongo.Store, opts ...Option) (*Store, error) {
	if locks == nil {
		return nil, errors.New("leadermongo: nil locks store")
	}
	cfg := config{members: DefaultMembersCollection, legacy: LegacyCollection}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("leadermongo: nil option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	// The members collection gets the lock collection's settings, not the
	// caller's: a member list read from a lagging secondary goes stale.
	return &Store{
		locks:   locks,
		members: locks.Collection(cfg.members),
		legacy:  legacyLeases{locks: locks.Collection(cfg.legacy), sessions: locks.Collection(cfg.legacy + "_sessions")},
		writers: make(map[string]*memberWriter),
	}, nil
}

// Member implements leader.MemberStore: the member's document with the
// highest Seq.
func (b *Store) Member(ctx context.Context, election, id string) (leader.Member, bool, error) {
	var d memberDoc
	err := b.members.FindOne(ctx, memberFilter(election, id),
		options.FindOne().SetSort(bson.D{{Key: "seq", Value: -1}})).Decode(&d)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return leader.Member{}, false, nil
	case err != nil:
		return leader.Member{}, false, fmt.Errorf("leadermongo: read member status: %w", err)
	}
	return d.member(), true, nil
}

// PutMember implements leader.MemberStore. The member's writes wait for each
// other; see the package doc for where each one goes.
func (b *Store) PutMember(ctx context.Context, election string, m leader.Member) error {
	if err := b.prepare(ctx); err != nil {
		return err
	}
	if err := b.ensureIndex(ctx); err != nil {
		return err
	}
	w, err := b.writer(ctx, memberID(election, m.ID))
	if err != nil {
		return err
	}
	defer w.release()
	now, err := b.locks.ServerNow(ctx)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx) // nothing sent: gen stays as it is
	}
	// The server time this write is sent at, never later: the latest
	// possible time then, so a member is not listed as older than it is,
	// yet a late write shows its true age. Never below an earlier write's,
	// so that a member's stamps rise with its Seq.
	seen := now.Latest.Truncate(time.Millisecond)
	if seen.Before(w.seen) {
		seen = w.seen
	}
	w.seen = seen
	// Taken with sem held: the member's writes are sent in Seq order.
	seq := memberSeq.Add(1)
	d := memberDoc{
		Election: election, Member: m.ID, Host: m.Host, PID: m.PID, Version: m.Version,
		Leader: m.Leader, LastSeen: seen, Seq: seq,
		Value: m.Value, Term: int64(m.Term), Proclaimed: m.Proclaimed, Rev: int64(m.Rev),
		HandoverTo: m.Handover.To, HandoverTerm: int64(m.Handover.Term), Priority: m.Priority,
	}
	if w.gen != "" && w.exists {
		err := b.updateMember(ctx, w.gen, &d)
		if err == nil {
			b.deleteOlder(ctx, election, m.ID, w)
			return nil
		}
		// This update may still be applied, at any time (or its document
		// is gone): gen is never written again. The next generation is
		// inserted, now if ctx allows, under a Seq of its own, so that
		// every document of gen has a lower one than the next's.
		w.gen, w.exists, w.older = "", false, true
		if ctx.Err() != nil {
			return fmt.Errorf("leadermongo: write member status: %w", err)
		}
		d.Seq = memberSeq.Add(1)
	}
	if w.gen == "" {
		w.gen, w.genSeq, w.exists = memberGenID(election, m.ID, d.Seq), d.Seq, false
	}
	d.ID = w.gen
	_, err = b.members.InsertOne(ctx, &d)
	switch {
	case err == nil:
		w.exists = true
	case mongo.IsDuplicateKeyError(err):
		// An earlier insert of gen landed, with an older state; the
		// inserts of gen still in flight, if any, cannot land over it.
		w.exists = true
		if err := b.updateMember(ctx, w.gen, &d); err != nil {
			w.gen, w.exists, w.older = "", false, true
			return fmt.Errorf("leadermongo: write member status: %w", err)
		}
	default:
		// Its outcome is unknown: the next write inserts gen again, so
		// that gen lands once at most.
		return fmt.Errorf("leadermongo: write member status: %w", err)
	}
	b.deleteOlder(ctx, election, m.ID, w)
	return nil
}

// Members implements leader.MemberStore.
// It only reads: on a database without member documents it finds none,
// and creates nothing.
func (b *Store) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	return b.listMembers(ctx, b.members, election, maxAge)
}

func (b *Store) listMembers(ctx context.Context, coll *mongo.Collection, election string, maxAge time.Duration) ([]leader.Member, error) {
	now, err := b.locks.ServerNowRead(ctx)
	if err != nil {
		return nil, err
	}
	cur, err := coll.Find(ctx,
		bson.D{
			{Key: "election", Value: election},
			{Key: "lastSeen", Value: bson.D{{Key: "$gte", Value: now.Earliest.Add(-maxAge)}}},
		},
		options.Find().SetSort(bson.D{{Key: "member", Value: 1}, {Key: "seq", Value: -1}}))
	if err != nil {
		return nil, fmt.Errorf("leadermongo: list members: %w", err)
	}
	var docs []memberDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("leadermongo: list members: %w", err)
	}
	// A member's stamps never fall as its Seq rises, so the documents this
	// age filter keeps include its latest one whenever they include any.
	members := make([]leader.Member, 0, len(docs))
	for i := range docs {
		if i > 0 && docs[i].Member == docs[i-1].Member {
			continue // an older generation
		}
		members = append(members, docs[i].member())
	}
	return members, nil
}

// DeleteMember implements leader.MemberStore. It waits for the member's write
// under way, if any, and removes all its documents.
func (b *Store) DeleteMember(ctx context.Context, election, id string) error {
	key := memberID(election, id)
	w, err := b.writer(ctx, key)
	if err != nil {
		return err
	}
	defer func() {
		b.writersMu.Lock()
		delete(b.writers, key)
		b.writersMu.Unlock()
		w.release()
	}()
	if _, err := b.members.DeleteMany(ctx, memberFilter(election, id)); err != nil {
		return fmt.Errorf("leadermongo: remove member status: %w", err)
	}
	return nil
}

// prepare prepares the lock store (dsyncmongo.Store.Prepare), as a
// Client's first lock does, before a member write or a preflight reads
// or writes anything of the members': a server that cannot be reached
// then fails them as it fails the lock, with the lock store's words,
// which name the server, rather than those of the index or read that
// happened to come first. Once the lock store is prepared it sends
// nothing.
func (b *Store) prepare(ctx context.Context) error {
	return b.locks.Prepare(ctx)
}

func (b *Store) ensureIndex(ctx context.Context) error {
	b.indexOnce.Lock()
	defer b.indexOnce.Unlock()
	if b.indexed {
		return nil
	}
	_, err := b.members.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "election", Value: 1}, {Key: "member", Value: 1}}})
	if err != nil {
		return fmt.Errorf("leadermongo: create index: %w", err)
	}
	b.indexed = true
	return nil
}
