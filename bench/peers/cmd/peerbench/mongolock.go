package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	lock "github.com/square/mongo-lock"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/go-dsync/dsync/bench/harness"
)

// mongoLockDriver is github.com/square/mongo-lock: one document per
// resource, taken and taken over with findAndModify (upsert).
//
// On FerretDB 1.24 its Unlock, Renew and Status fail: they start with an
// aggregate whose $project uses $filter, which FerretDB does not implement.
// There the driver releases and renews with the very findAndModify
// commands the library sends after that aggregate (see xUnlock and Renew
// in its lock.go), addressed by the resource the caller knows; everything
// else is the library's own code. On MongoDB the library is used as is.
type mongoLockDriver struct {
	uri, db string

	once    sync.Once
	ferret  bool // the server is FerretDB
	version string
}

func (d *mongoLockDriver) Name() string { return "mongo-lock" }

func (d *mongoLockDriver) probe(ctx context.Context) {
	d.once.Do(func() {
		d.version = "MongoDB-compatible server (unknown version)"
		c, err := mongo.Connect(ctx, options.Client().ApplyURI(d.uri))
		if err != nil {
			return
		}
		defer c.Disconnect(context.WithoutCancel(ctx))
		var info bson.M
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
			return
		}
		if _, ok := info["ferretdbFeatures"]; ok {
			d.ferret = true
			d.version = fmt.Sprintf("FerretDB, SQLite handler (reports MongoDB %v): the server dsync uses", info["version"])
			return
		}
		d.version = fmt.Sprintf("MongoDB %v: the server dsync uses", info["version"])
	})
}

func (d *mongoLockDriver) Describe(ctx context.Context) (string, string) {
	d.probe(ctx)
	return fmt.Sprintf("github.com/square/mongo-lock %s (mongo-driver %s)",
		moduleVersion("github.com/square/mongo-lock"), moduleVersion("go.mongodb.org/mongo-driver")), d.version
}

func (d *mongoLockDriver) notes() []string {
	n := []string{"mongo-lock has no blocking lock and no renewal: Lock retries XLock after a uniform random 50–250 ms (redsync's default delay), " +
		"and a held lock is renewed every TTL/3; XLock takes a lock over when its expiresAt, written with the holder's clock, is not after the caller's clock."}
	n = append(n, "mongo-lock's reader/writer lock and semaphore are its shared locks: RLock and each unit of Acquire are an SLock "+
		"(maxConcurrent unlimited for readers, the limit for a semaphore) under a lock id of their own, retried like XLock; a semaphore's units "+
		"are taken one SLock at a time. Neither SLock nor XLock looks at a shared lock's expiry: one left by a dead process stays until "+
		"mongo-lock's Purger removes it.")
	if d.ferret {
		n = append(n, "On FerretDB 1.24 mongo-lock's Client.Unlock, Renew and Status fail (NotImplemented: their aggregate's $project uses $filter). "+
			"The bench releases and renews with the library's own findAndModify documents (those of its xUnlock and Renew) addressed by resource, "+
			"skipping that aggregate: one command fewer per Unlock and per renewal than mongo-lock sends to MongoDB.")
		n = append(n, "On FerretDB the same goes for shared locks: released with the update of mongo-lock's sUnlock, renewed with the one Renew "+
			"sends for a shared lock; and the Purger, which starts with Status, cannot run.")
	}
	return n
}

func (d *mongoLockDriver) Connect(ctx context.Context, m *harness.Meter, ns string) (harness.Conn, error) {
	d.probe(ctx)
	mon := &event.CommandMonitor{
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			m.Command(e.CommandName, e.Duration, false)
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			m.Command(e.CommandName, e.Duration, true)
		},
	}
	c, err := mongo.Connect(ctx, options.Client().ApplyURI(d.uri).SetMonitor(mon).SetDialer(dialer{m}))
	if err != nil {
		return nil, err
	}
	coll := c.Database(d.db).Collection("mlock_" + ns)
	lc := lock.NewClient(coll)
	if err := lc.CreateIndexes(ctx); err != nil {
		_ = c.Disconnect(ctx)
		return nil, fmt.Errorf("mongo-lock: CreateIndexes: %w", err)
	}
	return &mongoLockConn{c: c, coll: coll, lc: lc, ferret: d.ferret}, nil
}

type dialer struct{ m *harness.Meter }

func (d dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return d.m.Conn(c), nil
}

type mongoLockConn struct {
	c      *mongo.Client
	coll   *mongo.Collection
	lc     *lock.Client
	ferret bool
}

func newLockID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ttlSeconds(ttl time.Duration) uint {
	return uint(max((ttl+time.Second-1)/time.Second, 1))
}

func (c *mongoLockConn) NewMutex(key string, ttl time.Duration) (harness.Locker, error) {
	return &mongoLockMutex{c: c, key: key, ttl: ttl}, nil
}

func (c *mongoLockConn) RenewCommands() []string { return []string{"findAndModify", "aggregate"} }

func (c *mongoLockConn) Drop(ctx context.Context) error { return c.coll.Drop(ctx) }

func (c *mongoLockConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.c.Disconnect(ctx)
}

// release releases the locks of lockID on resources.
func (c *mongoLockConn) release(ctx context.Context, lockID string, resources ...string) error {
	if !c.ferret {
		_, err := c.lc.Unlock(ctx, lockID)
		return err
	}
	for _, r := range resources {
		// The update of mongo-lock's xUnlock: an empty exclusive lock.
		err := c.coll.FindOneAndUpdate(ctx,
			bson.M{"resource": r, "exclusive.lockId": lockID},
			bson.M{"$set": bson.M{"exclusive": bson.M{
				"lockId": nil, "owner": nil, "host": nil, "comment": nil,
				"createdAt": nil, "renewedAt": nil, "expiresAt": nil, "acquired": false,
			}}},
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Err()
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return err
		}
	}
	return nil
}

// renew renews the locks of lockID on resources for ttl.
func (c *mongoLockConn) renew(ctx context.Context, lockID string, ttl uint, resources ...string) (bool, error) {
	if !c.ferret {
		st, err := c.lc.Renew(ctx, lockID, ttl)
		return err == nil && len(st) == len(resources), err
	}
	for _, r := range resources {
		// The update of mongo-lock's Renew, for one exclusive lock.
		now := time.Now()
		err := c.coll.FindOneAndUpdate(ctx,
			bson.M{"resource": r, "exclusive.lockId": lockID,
				"exclusive.expiresAt": bson.M{"$gt": now.Add(time.Second)}},
			bson.M{"$set": bson.M{
				"exclusive.expiresAt": now.Add(time.Duration(ttl) * time.Second),
				"exclusive.renewedAt": now,
			}},
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// mongoLockMutex is one resource locked under a lock id of its own.
type mongoLockMutex struct {
	c   *mongoLockConn
	key string
	ttl time.Duration

	id string
	k  *keeper
}

func (m *mongoLockMutex) try(ctx context.Context) (bool, error) {
	id := newLockID()
	err := m.c.lc.XLock(ctx, m.key, id, lock.LockDetails{TTL: ttlSeconds(m.ttl)})
	switch {
	case err == nil:
		m.id = id
		m.k = startKeeper(m.ttl, func(ctx context.Context) (bool, error) {
			return m.c.renew(ctx, id, ttlSeconds(m.ttl), m.key)
		})
		return true, nil
	case errors.Is(err, lock.ErrAlreadyLocked):
		return false, nil
	}
	return false, err
}

func (m *mongoLockMutex) Lock(ctx context.Context) error {
	for {
		ok, err := m.try(ctx)
		if ok || err != nil {
			return err
		}
		select {
		case <-time.After(jitter(50*time.Millisecond, 250*time.Millisecond)):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (m *mongoLockMutex) TryLock(ctx context.Context) (bool, error) { return m.try(ctx) }

func (m *mongoLockMutex) Unlock(ctx context.Context) error {
	m.k.stop()
	m.k = nil
	return m.c.release(ctx, m.id, m.key)
}

func (m *mongoLockMutex) Lost() bool { return m.k.isLost() }

// HoldMany locks every key under one lock id, renewed by one Renew call
// per interval: mongo-lock's way of holding a group of locks.
func (c *mongoLockConn) HoldMany(ctx context.Context, keys []string, ttl time.Duration) (func(context.Context) error, func() int, error) {
	id := newLockID()
	var mu sync.Mutex
	var held []string
	heldNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return held[:len(held):len(held)]
	}
	release := func(ctx context.Context) error { return c.release(ctx, id, heldNow()...) }
	var k *keeper
	for _, key := range keys {
		if err := c.lc.XLock(ctx, key, id, lock.LockDetails{TTL: ttlSeconds(ttl)}); err != nil {
			// Left to expire: the scenario drops the collection.
			k.stop()
			return nil, nil, fmt.Errorf("%d of %d locks acquired: %w", len(heldNow()), len(keys), err)
		}
		mu.Lock()
		held = append(held, key)
		mu.Unlock()
		if k == nil {
			k = startKeeper(ttl, func(ctx context.Context) (bool, error) {
				return c.renew(ctx, id, ttlSeconds(ttl), heldNow()...)
			})
		}
	}
	lost := func() int {
		if k.isLost() {
			return len(keys)
		}
		return 0
	}
	return func(ctx context.Context) error {
		k.stop()
		return release(ctx)
	}, lost, nil
}
