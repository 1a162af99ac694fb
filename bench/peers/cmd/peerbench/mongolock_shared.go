package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	lock "github.com/square/mongo-lock"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/go-dsync/dsync/bench/harness"
)

// mongo-lock's shared locks: SLock adds a lock to a resource's list of
// shared locks unless the resource has an exclusive lock or, with
// maxConcurrent ≥ 0, that many shared locks already. They are the read
// side of a reader/writer lock (XLock the write side), and, with
// maxConcurrent = limit, a semaphore of single units. Like XLock, SLock
// does not block: acquiring retries as the mutex's Lock does.
//
// Neither SLock nor XLock looks at a shared lock's expiresAt: a shared
// lock left by a dead process stays until mongo-lock's Purger removes it
// (and the Purger starts with Status, which fails on FerretDB 1.24).

// NewRWMutex returns the read side of a reader/writer lock on key.
func (c *mongoLockConn) NewRWMutex(key string, ttl time.Duration) (harness.RWLocker, error) {
	return &mongoLockRW{s: shared{c: c, key: key, ttl: ttl, max: -1}}, nil
}

// mongoLockRW holds at most one read lock at a time.
type mongoLockRW struct {
	s  shared
	id string
	k  *keeper
}

func (m *mongoLockRW) RLock(ctx context.Context) error {
	id, k, err := m.s.acquire(ctx)
	m.id, m.k = id, k
	return err
}

func (m *mongoLockRW) RUnlock(ctx context.Context) error {
	m.k.stop()
	m.k = nil
	return m.s.release(ctx, m.id)
}

// NewSemaphore returns a semaphore of limit units on key: each unit is a
// shared lock of its own.
func (c *mongoLockConn) NewSemaphore(key string, limit int64, ttl time.Duration) (harness.Semaphore, error) {
	return &mongoLockSemaphore{s: shared{c: c, key: key, ttl: ttl, max: int(limit)}}, nil
}

type mongoLockSemaphore struct {
	s shared

	mu   sync.Mutex
	held []unit // in the order acquired
}

type unit struct {
	id string
	k  *keeper
}

// Acquire takes n units one shared lock at a time: mongo-lock has no way
// to take several at once.
func (m *mongoLockSemaphore) Acquire(ctx context.Context, n int64) error {
	for range n {
		id, k, err := m.s.acquire(ctx)
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.held = append(m.held, unit{id, k})
		m.mu.Unlock()
	}
	return nil
}

// Release releases the n units acquired first.
func (m *mongoLockSemaphore) Release(ctx context.Context, n int64) error {
	m.mu.Lock()
	if int(n) > len(m.held) {
		m.mu.Unlock()
		return fmt.Errorf("mongo-lock semaphore: release of %d units, %d held", n, len(m.held))
	}
	units := m.held[:n:n]
	m.held = m.held[n:]
	m.mu.Unlock()
	var errs []error
	for _, u := range units {
		u.k.stop()
		errs = append(errs, m.s.release(ctx, u.id))
	}
	return errors.Join(errs...)
}

// shared takes and releases shared locks of one resource, each under a
// lock id of its own.
type shared struct {
	c   *mongoLockConn
	key string
	ttl time.Duration
	max int // SLock's maxConcurrent
}

// acquire retries SLock until it succeeds, then renews the lock every
// TTL/3 as a user of mongo-lock would.
func (s shared) acquire(ctx context.Context) (string, *keeper, error) {
	for {
		id := newLockID()
		err := s.c.lc.SLock(ctx, s.key, id, lock.LockDetails{TTL: ttlSeconds(s.ttl)}, s.max)
		switch {
		case err == nil:
			k := startKeeper(s.ttl, func(ctx context.Context) (bool, error) {
				return s.renew(ctx, id)
			})
			return id, k, nil
		case !errors.Is(err, lock.ErrAlreadyLocked):
			return "", nil, err
		}
		select {
		case <-time.After(jitter(50*time.Millisecond, 250*time.Millisecond)):
		case <-ctx.Done():
			return "", nil, context.Cause(ctx)
		}
	}
}

// release releases the shared lock of id: with Client.Unlock on MongoDB;
// on FerretDB, whose Unlock fails, with the update of mongo-lock's sUnlock.
func (s shared) release(ctx context.Context, id string) error {
	if !s.c.ferret {
		_, err := s.c.lc.Unlock(ctx, id)
		return err
	}
	err := s.c.coll.FindOneAndUpdate(ctx,
		bson.M{"resource": s.key, "shared.locks.lockId": id},
		bson.M{"$inc": bson.M{"shared.count": -1}, "$pull": bson.M{"shared.locks": bson.M{"lockId": id}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	return err
}

// renew renews the shared lock of id: with Client.Renew on MongoDB; on
// FerretDB, whose Renew fails, with the update Renew sends for a shared
// lock.
func (s shared) renew(ctx context.Context, id string) (bool, error) {
	ttl := ttlSeconds(s.ttl)
	if !s.c.ferret {
		st, err := s.c.lc.Renew(ctx, id, ttl)
		return err == nil && len(st) == 1, err
	}
	now := time.Now()
	err := s.c.coll.FindOneAndUpdate(ctx,
		bson.M{"resource": s.key, "shared.locks": bson.M{"$elemMatch": bson.M{
			"lockId": id, "expiresAt": bson.M{"$gt": now.Add(time.Second)}}}},
		bson.M{"$set": bson.M{
			"shared.locks.$.expiresAt": now.Add(time.Duration(ttl) * time.Second),
			"shared.locks.$.renewedAt": now,
		}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}

// Lacks says why mongo-lock has no column in the Once scenario, and no
// status page or compaction in the scale scenario.
func (d *mongoLockDriver) Lacks(scenario string) string {
	if scenario == harness.OnceScenario {
		return "no Once in mongo-lock: it has exclusive (XLock) and shared (SLock) locks only"
	}
	return scaleLacks(scenario, mongoLockStatus, mongoLockCompaction)
}
