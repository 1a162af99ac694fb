// Package leadermongo is the MongoDB backend of package leader: the
// leadership lease is a dsyncmongo lock on leader.LockKey(name), and each
// candidate's status is a document of its own in a members collection.
// The leases live in a collection of their own, "dsync_elections" by
// default, apart from the plain locks of dsyncmongo ("dsync_locks"), so a
// plain lock never excludes an election, whatever the two are named.
//
//	elections, err := leadermongo.New(db) // collections "dsync_elections", "dsync_members"
//	...
//	defer elections.Close()
//	e, err := leader.NewElection(elections, "scheduler")
//	...
//	defer e.Close()
//	err = e.Run(ctx, func(lctx context.Context) error { ... })
//
// The package example is the complete program. Options of the lock
// backend (its collection, wake-ups, logger...) are passed through
// WithLockOptions.
//
// The members collection is read and written like the lock collection,
// whatever the read preference and concerns of the database or client
// given to New: reads from the primary at read concern local, writes with
// the lock backend's write concern (dsyncmongo.WithWriteConcern through
// WithLockOptions; majority by default).
//
// A member document is written only by its member (an upsert of its own
// _id) and stamped with the server time its write was sent at, so a
// member's age is judged in server time like lease expiry. Members are
// listed live while their last heartbeat is younger than the age the
// caller gives, measured against the earliest server time the backend can
// prove.
//
// Like every write of dsync, a member write may be applied long after it
// was sent, after later writes of the same member. So each write carries
// a sequence number and applies only over an older one (the leader flag
// never goes back to an earlier state), and its time stamp is the one it
// was sent with, only ever raised: a late write cannot make a member look
// fresh. A write that lands after the member removed its document brings
// it back with that old stamp, so it is listed for at most the caller's
// age after it was sent, and stays behind as an unlisted document.
package leadermongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
)

// DefaultCollection holds the leadership leases: dsyncmongo lock
// documents, one chain of epochs per election. It is not dsyncmongo's
// DefaultCollection, so that the lease of an election can never be a
// plain lock of the same key: in one collection, the lock "leader/coll"
// would be the lease of the election "coll". A separate collection keeps
// the two name spaces apart without escaping names or forbidding any.
const DefaultCollection = "dsync_elections"

// DefaultMembersCollection holds the members' status documents.
const DefaultMembersCollection = "dsync_members"

// Backend is a leader.Backend over a MongoDB database. Create it with New;
// one per process and database, shared by its Elections; Close it after
// them. It embeds the dsyncmongo.Backend that holds the leadership
// leases, whose methods (Current, ServerTime...) it therefore has too;
// take plain locks on a dsyncmongo backend of their own, not on this one,
// whose collection is the elections'.
type Backend struct {
	*dsyncmongo.Backend
	members *mongo.Collection

	indexOnce sync.Mutex
	indexed   bool
}

var _ leader.Backend = (*Backend)(nil)

// An Option configures a Backend.
type Option func(*config) error

type config struct {
	members string
	locks   []dsyncmongo.Option
}

// WithMembersCollection sets the collection of member status documents.
// Default: DefaultMembersCollection ("dsync_members").
func WithMembersCollection(name string) Option {
	return func(c *config) error {
		if name == "" || strings.ContainsAny(name, "$\x00") || strings.HasPrefix(name, "system.") {
			return fmt.Errorf("leadermongo: invalid members collection name %q", name)
		}
		c.members = name
		return nil
	}
}

// WithLockOptions passes options to the dsyncmongo backend that holds the
// leadership leases (collection, write concern, poll interval, clock...).
// Default: none, so dsyncmongo's defaults, except for the collection,
// which is DefaultCollection ("dsync_elections") unless an option here
// sets it. Every process of an election must use the same collection;
// one shared with plain locks would make the lock "leader/NAME" the
// lease of the election NAME.
func WithLockOptions(opts ...dsyncmongo.Option) Option {
	return func(c *config) error {
		c.locks = append(c.locks, opts...)
		return nil
	}
}

// New returns a backend for elections in db. It does no I/O.
func New(db *mongo.Database, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, errors.New("leadermongo: nil database")
	}
	cfg := config{members: DefaultMembersCollection}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("leadermongo: nil option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	// The caller's options come after the default collection, so that a
	// dsyncmongo.WithCollection among them wins.
	locks, err := dsyncmongo.New(db, append([]dsyncmongo.Option{dsyncmongo.WithCollection(DefaultCollection)}, cfg.locks...)...)
	if err != nil {
		return nil, fmt.Errorf("leadermongo: %w", err)
	}
	// The members collection gets the lock collection's settings, not the
	// caller's: a member list read from a lagging secondary goes stale.
	return &Backend{Backend: locks, members: locks.Collection(cfg.members)}, nil
}

// Close stops the backend's background goroutines (the server-time
// estimate, and the wake-up event stream if WithLockOptions turned
// wake-ups on), waiting for them. Close the Elections using the backend
// first: calls made afterwards return dsyncmongo.ErrClosed, and an
// Election still leading loses its leadership when its renewals fail. It
// does not disconnect the client. Close is idempotent and returns nil.
func (b *Backend) Close() error { return b.Backend.Close() }

// memberDoc is one candidate's status.
type memberDoc struct {
	ID       string    `bson:"_id"` // election + "/" + member id
	Election string    `bson:"election"`
	Member   string    `bson:"member"`
	Host     string    `bson:"host"`
	PID      int       `bson:"pid"`
	Version  string    `bson:"version"`
	Leader   bool      `bson:"leader"`
	LastSeen time.Time `bson:"lastSeen"`
	// Seq orders the writes of the member's process: a write applies
	// only over a document with a smaller Seq.
	Seq int64 `bson:"seq"`
}

// memberSeq numbers member writes in this process. Only a member's own
// process writes its document, so a process-wide counter orders them.
var memberSeq atomic.Int64

func memberID(election, id string) string { return election + "/" + id }

func (d *memberDoc) member() leader.Member {
	return leader.Member{ID: d.Member, Host: d.Host, PID: d.PID, Version: d.Version, Leader: d.Leader, LastSeen: d.LastSeen}
}

// Leader implements leader.Backend.
func (b *Backend) Leader(ctx context.Context, election string) (leader.Info, error) {
	if election == "" {
		return leader.Info{}, errors.New("leadermongo: empty election name")
	}
	cur, err := b.Current(ctx, leader.LockKey(election))
	if errors.Is(err, dsyncmongo.ErrNoLock) || (err == nil && !cur.Live) {
		return leader.Info{}, fmt.Errorf("%w in %q", leader.ErrNoLeader, election)
	}
	if err != nil {
		return leader.Info{}, err
	}
	info := leader.Info{ID: cur.Owner, Host: cur.Host, PID: cur.PID, Since: cur.AcquiredAt, Token: cur.Token}
	var d memberDoc
	err = b.members.FindOne(ctx, bson.D{{Key: "_id", Value: memberID(election, cur.Owner)}}).Decode(&d)
	switch {
	case err == nil:
		info.Version = d.Version
	case !errors.Is(err, mongo.ErrNoDocuments):
		return leader.Info{}, fmt.Errorf("leadermongo: read member status: %w", err)
	}
	return info, nil
}

// PutMember implements leader.Backend.
func (b *Backend) PutMember(ctx context.Context, election string, m leader.Member) error {
	if err := b.ensureIndex(ctx); err != nil {
		return err
	}
	now, err := b.ServerTime(ctx)
	if err != nil {
		return err
	}
	seq := memberSeq.Add(1)
	_, err = b.members.UpdateOne(ctx,
		bson.D{
			{Key: "_id", Value: memberID(election, m.ID)},
			{Key: "seq", Value: bson.D{{Key: "$lt", Value: seq}}},
		},
		bson.D{
			{Key: "$set", Value: bson.D{
				{Key: "election", Value: election},
				{Key: "member", Value: m.ID},
				{Key: "host", Value: m.Host},
				{Key: "pid", Value: m.PID},
				{Key: "version", Value: m.Version},
				{Key: "leader", Value: m.Leader},
				{Key: "seq", Value: seq},
			}},
			// The server time this write was sent at, never later: the
			// latest possible time then, so a member is not listed as
			// older than it is, yet a late write shows its true age.
			{Key: "$max", Value: bson.D{{Key: "lastSeen", Value: now.Latest.Truncate(time.Millisecond)}}},
		},
		options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		// The document holds a later write of ours already: the filter did
		// not match it, so the upsert tried to insert its _id again.
		return nil
	}
	if err != nil {
		return fmt.Errorf("leadermongo: write member status: %w", err)
	}
	return nil
}

// Members implements leader.Backend.
func (b *Backend) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	now, err := b.ServerTime(ctx)
	if err != nil {
		return nil, err
	}
	cur, err := b.members.Find(ctx,
		bson.D{
			{Key: "election", Value: election},
			{Key: "lastSeen", Value: bson.D{{Key: "$gte", Value: now.Earliest.Add(-maxAge)}}},
		},
		options.Find().SetSort(bson.D{{Key: "member", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("leadermongo: list members: %w", err)
	}
	var docs []memberDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("leadermongo: list members: %w", err)
	}
	members := make([]leader.Member, len(docs))
	for i := range docs {
		members[i] = docs[i].member()
	}
	return members, nil
}

// DeleteMember implements leader.Backend.
func (b *Backend) DeleteMember(ctx context.Context, election, id string) error {
	if _, err := b.members.DeleteOne(ctx, bson.D{{Key: "_id", Value: memberID(election, id)}}); err != nil {
		return fmt.Errorf("leadermongo: remove member status: %w", err)
	}
	return nil
}

func (b *Backend) ensureIndex(ctx context.Context) error {
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
