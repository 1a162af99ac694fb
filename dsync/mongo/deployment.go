package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/internal/ferretdb"
)

// What the store learns of the deployment it runs on, as it is
// prepared: whether the server is FerretDB, and which release; the
// deployment's kind (topology); whether its collections are sharded as
// the protocol needs (sharding) and its lock index (index.go); whether
// it is reached over loopback (loopback.go). How the store writes to it
// (write timeouts, which failed writes are worth sending again) is
// writes.go's.

// A platform is what the store learned of its deployment. Its fields but
// ferret and loopback are set by probe, check and reach, which the store
// calls one at a time, holding its preparation lock (Store.sem), and are
// read only under that lock; ferret and loopback are read anywhere, once
// set.
type platform struct {
	db   *mongo.Database
	coll *mongo.Collection // the lock collection (its index)
	cfg  *config

	probed bool     // ferret, ferretRelease and topo are known
	topo   topology // the deployment's kind
	// ferret: the server is FerretDB; ferretRelease: 1 or 2 there, else
	// 0 (internal/ferretdb's Release).
	ferret        atomic.Bool
	ferretRelease int
	indexed       bool // check is done
	// loopback: every server is reached over loopback (loopback.go);
	// reached: that is known.
	loopback atomic.Bool
	reached  bool
}

// isFerret reports whether the server is FerretDB (false until probed).
func (p *platform) isFerret() bool { return p.ferret.Load() }

// probe detects, once, whether the server is FerretDB and what kind of
// deployment it is; the store's preparation lock is held. It comes
// before any write: it decides the write timeout.
func (p *platform) probe(ctx context.Context) error {
	if p.probed {
		return nil
	}
	release, err := p.detectFerretDB(ctx)
	if err != nil {
		return err
	}
	ferret := release != 0
	topo := topologySingle
	switch {
	case p.cfg.test != nil && p.cfg.test.topology != nil:
		topo = *p.cfg.test.topology
	case !ferret:
		if topo, err = p.detectTopology(ctx); err != nil {
			return err
		}
	}
	p.ferret.Store(ferret)
	p.ferretRelease = release
	p.topo = topo
	p.probed = true
	p.logStart()
	return nil
}

// logStart says, once, at Info, where the store keeps its documents:
// when two programs (or a program and the dsync command) should share
// locks and do not, the database or collection is the usual culprit.
func (p *platform) logStart() {
	server := "MongoDB"
	if p.ferret.Load() {
		server = "FerretDB"
	}
	p.cfg.logger.Info("dsyncmongo: where this process keeps its locks",
		slog.String("database", p.db.Name()), slog.String("collection", p.cfg.collection),
		slog.String("server", server+", "+p.topo.String()))
}

// check checks the collections' sharding on a sharded cluster and
// creates the index, unless told not to; the store's preparation lock
// is held.
func (p *platform) check(ctx context.Context) error {
	if p.topo == topologySharded {
		if err := p.checkSharding(ctx); err != nil {
			return err
		}
	}
	if !p.indexed && p.cfg.manageIndexes {
		// The (key, kind, epoch) index serves queries of people (the
		// protocol reads by _id only). It is not unique: a claim and its
		// marker share key and epoch. The deterministic _id alone makes
		// inserts exclusive.
		if err := p.ensureIndex(ctx); err != nil {
			return err
		}
	}
	p.indexed = true
	return nil
}

// topology is what hello says of the deployment: how many servers may
// answer the samples over time.
type topology int

const (
	topologySingle   topology = iota // a standalone server, FerretDB
	topologyReplicas                 // a replica set: failovers change the primary
	topologySharded                  // mongos: each shard is a replica set
)

func (t topology) String() string {
	return [...]string{"a single server", "a replica set", "a sharded cluster (mongos)"}[t]
}

// detectTopology asks hello (or, failing that, isMaster) what answers: a
// mongos says "isdbgrid", a replica set member names its set. A server
// that answers neither is taken to be a replica set, which assumes the
// most (a member skew).
func (p *platform) detectTopology(ctx context.Context) (topology, error) {
	var reply struct {
		Msg     string `bson:"msg"`
		SetName string `bson:"setName"`
	}
	err := p.db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&reply)
	var se mongo.ServerError
	if errors.As(err, &se) && ctx.Err() == nil {
		err = p.db.RunCommand(ctx, bson.D{{Key: "isMaster", Value: 1}}).Decode(&reply)
	}
	switch {
	case errors.As(err, &se) && ctx.Err() == nil:
		p.cfg.logger.Debug("dsyncmongo: neither hello nor isMaster answered; assuming a replica set", slog.Any("err", err))
		return topologyReplicas, nil
	case err != nil:
		return 0, wrap(ctx, "hello on", p.db.Name(), err)
	case reply.Msg == "isdbgrid":
		return topologySharded, nil
	case reply.SetName != "":
		return topologyReplicas, nil
	}
	return topologySingle, nil
}

// memberSkew is the member skew to assume on a deployment: the one set
// with WithMemberSkew, else DefaultMemberSkew wherever more than one
// server can be primary, and 0 on a single server.
func (p *platform) memberSkew(t topology) time.Duration {
	if p.cfg.memberSkew >= 0 {
		return p.cfg.memberSkew
	}
	if t == topologySingle {
		return 0
	}
	return DefaultMemberSkew
}

// detectFerretDB returns the release of FerretDB the server is, as its
// buildInfo reply names it (internal/ferretdb), 0 for a server that is not
// FerretDB. A server that refuses buildInfo (the Stable API in strict mode
// does) counts as MongoDB; any other failure is returned.
func (p *platform) detectFerretDB(ctx context.Context) (release int, err error) {
	if t := p.cfg.test; t != nil && t.ferretDB != nil {
		if *t.ferretDB {
			return 1, nil
		}
		return 0, nil
	}
	raw, err := p.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	var se mongo.ServerError
	switch {
	case err == nil:
		release, _ := ferretdb.Release(raw)
		return release, nil
	case errors.As(err, &se) && ctx.Err() == nil:
		p.cfg.logger.Debug("dsyncmongo: buildInfo refused; taking the server for MongoDB", slog.Any("err", err))
		return 0, nil
	}
	return 0, wrap(ctx, "buildInfo on", p.db.Name(), err)
}

// shardKeyFields are the fields a lock collection may be sharded on: each
// is a function of a document's _id (a claim's or marker's _id names its
// key, epoch and kind; a marker's names its nonce), so all the inserts of
// one _id reach one shard, where the unique _id index refuses all but the
// first. Sharded on any other field (owner, session, at), two claims of one
// epoch could land on two shards, and both would count.
var shardKeyFields = []string{"_id", "key", "kind", "epoch", "nonce"}

// checkSharding refuses a lock collection sharded on a field that would
// break the uniqueness of _ids (see shardKeyFields), and a sessions
// collection sharded on anything but _id (the session renewals and the
// server-time samples filter on _id alone, and a sample's upsert needs
// the whole shard key in its filter), and a directory of keys or a
// records collection sharded on anything but _id (a key or a record
// inserted on two shards would be listed twice).
// The shard keys are read from
// config.collections; where that is not allowed, collStats tells whether
// the collection is sharded at all, and a sharded one whose key cannot be
// read is refused too (ErrSharded). If neither answers, the call fails with
// their errors, and the next call asks again. Run through a mongos only.
func (p *platform) checkSharding(ctx context.Context) error {
	for _, c := range []struct {
		name    string
		allowed []string
		why     string
	}{
		{p.cfg.collection, shardKeyFields, "only on fields that the document's _id determines (key, or _id), so that all the inserts of one _id reach one shard"},
		{p.cfg.collection + sessionsSuffix, []string{"_id"}, "only on _id, which is all its updates filter on"},
		{p.cfg.collection + keysSuffix, []string{"_id"}, "only on _id, so that all the inserts of one key reach one shard"},
		{p.cfg.collection + recordsSuffix, []string{"_id"}, "only on _id, so that all the inserts of one record reach one shard"},
	} {
		key, sharded, err := p.shardKey(ctx, c.name)
		if err != nil {
			// Not ErrSharded: the server may answer next time.
			return fmt.Errorf("dsyncmongo: cannot tell whether collection %q is sharded, or on what (grant find on config.collections, or collStats on the collection): %w",
				c.name, err)
		}
		if !sharded {
			continue
		}
		if key == nil {
			return fmt.Errorf("%w: collection %q is sharded, and its shard key cannot be read from config.collections (grant find on it to check it); it may be sharded %s",
				ErrSharded, c.name, c.why)
		}
		elems, err := key.Elements()
		if err != nil || len(elems) == 0 {
			return fmt.Errorf("%w: collection %q has an unreadable shard key %s", ErrSharded, c.name, key)
		}
		for _, e := range elems {
			if !slices.Contains(c.allowed, e.Key()) {
				return fmt.Errorf("%w: collection %q is sharded on %s; it may be sharded %s. Use another collection (WithCollection)",
					ErrSharded, c.name, shardKeyString(elems), c.why)
			}
		}
	}
	return nil
}

// shardKey returns the shard key of the collection name of the store's
// database, and whether it is sharded. sharded with a nil key: sharded,
// key unknown.
func (p *platform) shardKey(ctx context.Context, name string) (bson.Raw, bool, error) {
	if err := p.cfg.fault("shard key"); err != nil {
		return nil, false, err
	}
	ns := p.db.Name() + "." + name
	var entry struct {
		Key     bson.Raw `bson:"key"`
		Dropped bool     `bson:"dropped"` // before MongoDB 5.0, dropped collections stay listed
	}
	err := p.db.Client().Database(p.cfg.configDB()).Collection("collections").
		FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&entry)
	switch {
	case err == nil:
		return entry.Key, !entry.Dropped, nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return nil, false, nil
	case ctx.Err() != nil:
		return nil, false, err
	}
	p.cfg.logger.Debug("dsyncmongo: reading config.collections failed; asking collStats", slog.String("collection", name), slog.Any("err", err))
	var stats struct {
		Sharded bool `bson:"sharded"`
	}
	serr := p.db.RunCommand(ctx, bson.D{{Key: "collStats", Value: name}}).Decode(&stats)
	var se mongo.ServerError
	if errors.As(serr, &se) && se.HasErrorCode(26) { // NamespaceNotFound: not created yet, so not sharded
		return nil, false, nil
	}
	if serr != nil {
		return nil, false, fmt.Errorf("config.collections: %w; collStats: %w", err, serr)
	}
	return nil, stats.Sharded, nil
}

// shardKeyString writes a shard key as the shell shows it: {key: 1, epoch: "hashed"}.
func shardKeyString(elems []bson.RawElement) string {
	var b strings.Builder
	b.WriteString("{")
	for i, e := range elems {
		if i > 0 {
			b.WriteString(", ")
		}
		v := e.Value()
		val := v.String()
		if s, ok := v.StringValueOK(); ok {
			val = strconv.Quote(s)
		} else if n, ok := v.AsInt64OK(); ok {
			val = strconv.FormatInt(n, 10)
		}
		fmt.Fprintf(&b, "%s: %s", e.Key(), val)
	}
	b.WriteString("}")
	return b.String()
}
