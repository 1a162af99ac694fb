package dsyncmongo

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The lock collection's index (WithIndexManagement): the store creates
// it, or accepts an equivalent one, and refuses a collection with a
// unique index that would refuse end markers.

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
// collection with a unique index that would refuse end markers. It lists
// the indexes first: past a collection's first use the index is there,
// and a fresh process (a cron job's) then sends one command for it, not
// two.
func (p *platform) ensureIndex(ctx context.Context) error {
	found, lerr := p.findIndex(ctx)
	switch {
	case lerr == nil && found.blocking != "":
		return found.blockingError(p.cfg.collection)
	case lerr == nil && found.equivalent != "":
		return nil
	case lerr != nil && ctx.Err() != nil:
		return wrap(ctx, "list the indexes of", p.cfg.collection, lerr)
	}
	err := p.cfg.fault("createIndexes")
	if err == nil {
		_, err = p.coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: lockIndexKeys})
	}
	if err != nil && ctx.Err() != nil {
		return wrap(ctx, "create index on", p.cfg.collection, err)
	}
	if err == nil && lerr == nil {
		return nil // listed just before: no index in the way
	}
	return p.judgeIndexes(ctx, err)
}

// judgeIndexes lists the indexes after createIndexes returned createErr,
// or after it succeeded where the listing before had failed: an index in
// the way is not an error of createIndexes. Not created: no privilege,
// or an index with these keys exists under another name or with other
// options (IndexOptionsConflict, 85), or another index has its name
// (IndexKeySpecsConflict, 86).
func (p *platform) judgeIndexes(ctx context.Context, createErr error) error {
	found, lerr := p.findIndex(ctx)
	if lerr == nil && found.blocking != "" {
		return found.blockingError(p.cfg.collection)
	}
	if createErr == nil {
		if lerr != nil {
			p.cfg.logger.Debug("dsyncmongo: listing the lock collection's indexes failed", slog.String("collection", p.cfg.collection), slog.Any("err", lerr))
		}
		return nil
	}
	if lerr == nil && found.equivalent != "" {
		p.cfg.logger.Debug("dsyncmongo: using the existing index", slog.String("collection", p.cfg.collection), slog.String("index", found.equivalent), slog.Any("createErr", createErr))
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
		ErrIndex, lockIndexName, p.cfg.collection, why, createErr)
}

// blockingError is the error of a collection whose unique index refuses
// end markers.
func (x indexes) blockingError(collection string) error {
	return fmt.Errorf("%w: collection %q has the unique index %s, which refuses the end markers dsync writes "+
		"(a claim and its markers share key and epoch)%s; drop it (db.%s.dropIndex(%q))",
		ErrIndex, collection, x.blocking, x.v1Hint(), collection, x.blockingName)
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
func (p *platform) findIndex(ctx context.Context) (indexes, error) {
	var x indexes
	cur, err := p.coll.Indexes().List(ctx)
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
