package dsyncmongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
)

// MaxKeyLen is the longest key accepted, in bytes. Lock documents are
// indexed by key, and older MongoDB versions limit an index key to 1024
// bytes.
const MaxKeyLen = 512

// NewStore returns the driver's store over db. The lock documents are in
// collection DefaultCollection unless WithCollection says otherwise.
// Sessions, wake-up events and the directory of keys are in collections
// named after it. Give it to dsync.NewClient, which runs the protocol over
// it, and which closes it when the Client is closed:
//
//	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase))
//	...
//	locks, err := dsync.NewClient(store, dsync.ClientWithTTL(10*time.Second))
//
// A database whose name MongoDB refuses (CheckDatabaseName) is refused
// here, with ErrInvalidDatabase. NewStore does no I/O: the index is
// created, and the server's clock measured, by the first call that needs
// them, with that call's context; a failure is returned to that call and
// retried by the next. That first call also says, once, at Info through
// the store's logger (WithLogger), which database and collection the
// store uses. A Client's reads (List, Queue, HasKey, ListOrder,
// Revocations) create nothing and write nothing (Store.PrepareRead): they
// need only the read role. One store (and one Client) per process and
// database is the intended use.
func NewStore(db *mongo.Database, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, ErrNilDatabase
	}
	if err := CheckDatabaseName(db.Name()); err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newStore(db, cfg), nil
}

// Collection returns a collection of the store's database with its lock
// collection's settings. They apply whatever the database's or client's
// settings are. Reads go to the primary at read concern local: a
// secondary's or a majority snapshot's view may lag, and a claim must see
// every end that was acknowledged. Writes use the store's write concern
// (WithWriteConcern, majority by default). Package leadermongo keeps its
// member documents in such a collection.
func (s *Store) Collection(name string) *mongo.Collection { return s.collection(name) }

// ServerNow returns the interval the server's current time certainly lies
// in. It comes from the estimate the store judges expiry with. If no call
// has prepared the store yet, ServerNow prepares it first: the lock index,
// and a clock sample that is a write. ServerNowRead writes nothing.
func (s *Store) ServerNow(ctx context.Context) (clockcheck.Interval, error) {
	est, err := s.prepare(ctx)
	if err != nil {
		return clockcheck.Interval{}, err
	}
	return est.Now(), nil
}
