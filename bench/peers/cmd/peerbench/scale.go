package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.uber.org/zap"

	"github.com/go-dsync/dsync/bench/harness"
)

// The scale scenario's idle keys, for the peers: they run its series of
// keys in the collection (the keys each locked and unlocked once, then a
// fresh process's first Lock+Unlock of one just used), and count what
// their store keeps of them. None has a status page or compacts idle
// keys: "—" in those rows, with the reason their Lacks gives.

var (
	_ harness.DocCounter = (*mongoLockDriver)(nil)
	_ harness.DocCounter = (*redsyncDriver)(nil)
	_ harness.DocCounter = (*etcdDriver)(nil)
)

// CountDocs counts the documents of mongo-lock's collection: one per
// resource ever locked.
func (d *mongoLockDriver) CountDocs(ctx context.Context, ns string) (map[string]int64, error) {
	c, err := mongo.Connect(ctx, options.Client().ApplyURI(d.uri))
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	n, err := c.Database(d.db).Collection("mlock_"+ns).CountDocuments(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	return map[string]int64{"documents in the lock collection": n}, nil
}

// CountDocs counts the Redis keys of the namespace (redsync's Unlock
// deletes a lock's key).
func (d *redsyncDriver) CountDocs(ctx context.Context, ns string) (map[string]int64, error) {
	c := redis.NewClient(&redis.Options{Addr: d.addr})
	defer c.Close()
	var n int64
	it := c.Scan(ctx, 0, ns+":*", 1000).Iterator()
	for it.Next(ctx) {
		n++
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return map[string]int64{"keys in Redis": n}, nil
}

// CountDocs counts the etcd keys under the namespace's prefix (a lock's
// key is deleted at Unlock; etcd keeps its old revisions until it
// compacts).
func (d *etcdDriver) CountDocs(ctx context.Context, ns string) (map[string]int64, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: d.endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r, err := c.Get(ctx, "/"+ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return map[string]int64{"keys in etcd": r.Count}, nil
}

// scaleLacks says why a peer has no status page and no compaction.
func scaleLacks(scenario, statusPage, compaction string) string {
	switch scenario {
	case harness.ScaleStatusPage:
		return statusPage
	case harness.ScaleCompaction:
		return compaction
	}
	return ""
}

const (
	mongoLockStatus = "mongo-lock has no status page (no command, no listing of its own): its Client.Status returns the locks that " +
		"match a filter, and fails on FerretDB 1.24 (its aggregate uses $filter)"
	mongoLockCompaction = "mongo-lock compacts nothing: a resource's document stays after Unlock (its Purger releases expired locks and deletes " +
		"no document)"
	redsyncStatus     = "redsync has no status page: a lock is a Redis key while held, deleted at Unlock"
	redsyncCompaction = "nothing to compact: redsync's Unlock deletes the lock's key"
	etcdStatus        = "etcd's client has no status page of locks: a lock is a key under its prefix while held or awaited (etcdctl get " +
		"--prefix lists them), deleted at Unlock"
	etcdCompaction = "nothing to compact per key: etcd's Unlock deletes the lock's key; etcd keeps old revisions until its own " +
		"compaction (off by default)"
)
