package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// What the store adapts to the deployment it runs on: the index it
// needs, the server's kind, write timeouts and which failed writes are
// worth sending again.

// lockIndexKeys are the keys of the lock collection's index. It is not
// unique: a claim and its end markers share key and epoch.
var lockIndexKeys = bson.D{{Key: "key", Value: 1}, {Key: "kind", Value: 1}, {Key: "epoch", Value: 1}}

// lockIndexName is the name the server gives the index by default.
const lockIndexName = "key_1_kind_1_epoch_1"

// v1IndexName is the unique {key: 1, epoch: 1} index that dsync's first
// protocol created on the lock collection. Left in place, it makes every
// end marker's insert fail with a duplicate key (a claim and its marker
// share key and epoch).
const v1IndexName = "key_1_epoch_1"

// markerFields are the fields that claims and end markers of one epoch
// share: a unique index on some of them only (besides _id) refuses end
// markers, or a second marker of one epoch.
var markerFields = []string{"key", "kind", "epoch"}

// ensureIndex creates the (key, kind, epoch) index, or accepts an
// equivalent one that exists (WithIndexManagement), and refuses a
// collection with a unique index that would refuse end markers.
func (s *Store) ensureIndex(ctx context.Context) error {
	err := s.cfg.fault("createIndexes")
	if err == nil {
		_, err = s.coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: lockIndexKeys})
	}
	if err != nil && ctx.Err() != nil {
		return wrap(ctx, "create index on", s.cfg.collection, err)
	}
	// Created or not, list the indexes: an index in the way is not an
	// error of createIndexes. Not created: no privilege, or an index with
	// these keys exists under another name or with other options
	// (IndexOptionsConflict, 85), or another index has its name
	// (IndexKeySpecsConflict, 86).
	found, lerr := s.findIndex(ctx)
	if lerr == nil && found.blocking != "" {
		return fmt.Errorf("%w: collection %q has the unique index %s, which refuses the end markers dsync writes "+
			"(a claim and its markers share key and epoch)%s; drop it (db.%s.dropIndex(%q))",
			ErrIndex, s.cfg.collection, found.blocking, found.v1Hint(), s.cfg.collection, found.blockingName)
	}
	if err == nil {
		if lerr != nil {
			s.cfg.logger.Debug("dsyncmongo: listing the lock collection's indexes failed", slog.String("collection", s.cfg.collection), slog.Any("err", lerr))
		}
		return nil
	}
	if lerr == nil && found.equivalent != "" {
		s.cfg.logger.Debug("dsyncmongo: using the existing index", slog.String("collection", s.cfg.collection), slog.String("index", found.equivalent), slog.Any("createErr", err))
		return nil
	}
	why := "no equivalent index exists"
	switch {
	case lerr != nil:
		why = fmt.Sprintf("listing the existing indexes failed too (%v)", lerr)
	case found.conflict != "":
		why = "the existing " + found.conflict + " is not equivalent (it must be on exactly these keys, not unique, with no partial filter, no collation and not hidden)"
	}
	return fmt.Errorf("%w: creating the index {key: 1, kind: 1, epoch: 1} (%q) on collection %q failed, and %s; "+
		"grant the createIndex privilege on the collection, or create the index beforehand and use WithIndexManagement(false): %w",
		ErrIndex, lockIndexName, s.cfg.collection, why, err)
}

// indexes is what findIndex learned of the lock collection's indexes.
type indexes struct {
	equivalent   string // the name of an index equivalent to the lock index
	conflict     string // else: an index on its keys, or with its name, that is not
	blocking     string // a unique index that refuses end markers, described
	blockingName string
}

func (x indexes) v1Hint() string {
	if x.blockingName == v1IndexName {
		return ": the collection was written by an older dsync (protocol v1)"
	}
	return ""
}

// findIndex lists the lock collection's indexes.
func (s *Store) findIndex(ctx context.Context) (indexes, error) {
	var x indexes
	cur, err := s.coll.Indexes().List(ctx)
	if err != nil {
		return x, err
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		return x, err
	}
	for _, spec := range specs {
		n, _ := spec.Lookup("name").StringValueOK()
		keys, ok := spec.Lookup("key").DocumentOK()
		if !ok {
			continue
		}
		if blocksMarkers(spec, keys) && x.blocking == "" {
			x.blocking, x.blockingName = fmt.Sprintf("%q (%s)", n, keys), n
		}
		if !sameKeys(keys) {
			if n == lockIndexName {
				x.conflict = fmt.Sprintf("index %q (on other keys)", n)
			}
			continue
		}
		if equivalentIndex(spec) {
			x.equivalent = n
			continue
		}
		x.conflict = fmt.Sprintf("index %q on {key, kind, epoch}", n)
	}
	return x, nil
}

// blocksMarkers reports whether an index is unique on fields that claims
// and markers of one epoch share, and on nothing else: every document has
// them, so the index refuses a marker next to its claim, or a second
// marker of a kind for an epoch (two withdrawn claims of one epoch). A
// partial unique index is taken to refuse them too.
func blocksMarkers(spec, keys bson.Raw) bool {
	if u, ok := spec.Lookup("unique").BooleanOK(); !ok || !u {
		return false
	}
	elems, err := keys.Elements()
	if err != nil || len(elems) == 0 {
		return false
	}
	for _, e := range elems {
		if !slices.Contains(markerFields, e.Key()) {
			return false
		}
	}
	return true
}

// sameKeys reports whether an index's keys are key, kind, epoch in this
// order, each ascending or descending: any of them serves equality on key
// and kind with a sort on epoch.
func sameKeys(keys bson.Raw) bool {
	elems, err := keys.Elements()
	if err != nil || len(elems) != len(markerFields) {
		return false
	}
	for i, want := range markerFields {
		if elems[i].Key() != want {
			return false
		}
		v, ok := elems[i].Value().AsFloat64OK()
		if !ok || (v != 1 && v != -1) {
			return false
		}
	}
	return true
}

// equivalentIndex reports whether an index on the lock keys can stand in
// for the one the store creates: over every document, with binary
// string comparison, used by queries, and not unique (a unique one
// refuses a second marker of one kind for an epoch).
func equivalentIndex(spec bson.Raw) bool {
	if u, ok := spec.Lookup("unique").BooleanOK(); ok && u {
		return false
	}
	if _, err := spec.LookupErr("partialFilterExpression"); err == nil {
		return false
	}
	if h, ok := spec.Lookup("hidden").BooleanOK(); ok && h {
		return false
	}
	if c, err := spec.LookupErr("collation"); err == nil {
		doc, ok := c.DocumentOK()
		if !ok {
			return false
		}
		if loc, _ := doc.Lookup("locale").StringValueOK(); loc != "simple" {
			return false
		}
	}
	return true
}

// detectFerretDB reports whether the server is FerretDB, which adds
// ferretdbVersion to its buildInfo reply, and the release of FerretDB it
// is (ferretReleaseOf; 0: not FerretDB). A server that refuses buildInfo
// (the Stable API in strict mode does) counts as MongoDB; any other
// failure is returned.
func (s *Store) detectFerretDB(ctx context.Context) (ferret bool, release int, err error) {
	if t := s.cfg.test; t != nil && t.ferretDB != nil {
		if *t.ferretDB {
			return true, 1, nil
		}
		return false, 0, nil
	}
	raw, err := s.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	var se mongo.ServerError
	switch {
	case err == nil:
		_, err = raw.LookupErr("ferretdbVersion")
		return err == nil, ferretReleaseOf(raw), nil
	case errors.As(err, &se) && ctx.Err() == nil:
		s.cfg.logger.Debug("dsyncmongo: buildInfo refused; taking the server for MongoDB", slog.Any("err", err))
		return false, 0, nil
	}
	return false, 0, wrap(ctx, "buildInfo on", s.db.Name(), err)
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
// the whole shard key in its filter), and a directory of keys sharded on
// anything but _id (a key recorded on two shards would be listed twice).
// The shard keys are read from
// config.collections; where that is not allowed, collStats tells whether
// the collection is sharded at all, and a sharded one whose key cannot be
// read is refused too (ErrSharded). If neither answers, the call fails with
// their errors, and the next call asks again. Run through a mongos only.
func (s *Store) checkSharding(ctx context.Context) error {
	for _, c := range []struct {
		name    string
		allowed []string
		why     string
	}{
		{s.cfg.collection, shardKeyFields, "only on fields that the document's _id determines (key, or _id), so that all the inserts of one _id reach one shard"},
		{s.cfg.collection + sessionsSuffix, []string{"_id"}, "only on _id, which is all its updates filter on"},
		{s.cfg.collection + keysSuffix, []string{"_id"}, "only on _id, so that all the inserts of one key reach one shard"},
	} {
		key, sharded, err := s.shardKey(ctx, c.name)
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
func (s *Store) shardKey(ctx context.Context, name string) (bson.Raw, bool, error) {
	if err := s.cfg.fault("shard key"); err != nil {
		return nil, false, err
	}
	ns := s.db.Name() + "." + name
	var entry struct {
		Key     bson.Raw `bson:"key"`
		Dropped bool     `bson:"dropped"` // before MongoDB 5.0, dropped collections stay listed
	}
	err := s.db.Client().Database(s.cfg.configDB()).Collection("collections").
		FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&entry)
	switch {
	case err == nil:
		return entry.Key, !entry.Dropped, nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return nil, false, nil
	case ctx.Err() != nil:
		return nil, false, err
	}
	s.cfg.logger.Debug("dsyncmongo: reading config.collections failed; asking collStats", slog.String("collection", name), slog.Any("err", err))
	var stats struct {
		Sharded bool `bson:"sharded"`
	}
	serr := s.db.RunCommand(ctx, bson.D{{Key: "collStats", Value: name}}).Decode(&stats)
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
