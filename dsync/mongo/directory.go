package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The directory of keys (driver.KeyDirectory: PutKeys, ListKeys): a
// collection named after the lock collection, "<collection>_keys", of one
// document per key, {_id: key, created}, inserted once and never updated.
// It is the list of keys, whatever the lock collection keeps of them.
//
// Its only index is _id's. An insert, and the duplicate-key answer that
// makes a second one a no-op, cost the same whatever the collection
// holds, on MongoDB and on FerretDB alike. Reads differ: MongoDB walks
// the _id index, so a listing is a range of it, in order of bytes, from
// any key on. FerretDB (1.24) sorts, skips and filters by decoding every
// document it passes; the one read it streams in O(batch) is a find
// without filter or sort, in its natural order: the order the documents
// were inserted, which stays as it is, since none is ever updated or
// deleted by dsync. So there a listing is in order of first use
// (driver.OrderFirstUse), a prefix is filtered by the server as the
// cursor goes (it decodes the keys it passes, until a batch is full), and
// resuming after a key, which would mean reading every key before it, is
// refused. docs/deployments.md gives the figures.

const (
	// keysSuffix names the directory after the lock collection.
	keysSuffix = "_keys"
	// listBatch is how many keys a listing asks the server for at a
	// time: the first batch and each getMore.
	listBatch = 100
	// cursorCloseTimeout bounds the killCursors of a listing its caller
	// left early, or whose context ended.
	cursorCloseTimeout = 2 * time.Second
)

// A directory serves the directory of keys. Its state is the collection:
// the order it lists keys in is the server's (KeyOrder).
type directory struct {
	coll     *mongo.Collection
	cfg      *config
	writer   *writer
	clock    *serverClock
	platform *platform // FerretDB lists keys in order of first use
}

// keyDoc is a document of the directory.
type keyDoc struct {
	ID string `bson:"_id"`
	// Created is the server time, as estimated, when the key was first
	// recorded; for people only.
	Created time.Time `bson:"created"`
}

// PutKeys implements driver.KeyDirectory: one unordered insert, whose
// duplicate-key answers mean those keys are recorded.
func (d *directory) PutKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	docs := make([]any, len(keys))
	for i, key := range keys {
		if err := checkKey(key); err != nil {
			return err
		}
		docs[i] = keyDoc{ID: key, Created: d.clock.now()}
	}
	err := d.writer.write(ctx, "keys", func(ctx context.Context) error {
		_, err := d.coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
		return err
	})
	var bwe mongo.BulkWriteException
	if err == nil || !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return err
	}
	for _, we := range bwe.WriteErrors {
		if !isDuplicateKey(we.Code) {
			return err
		}
	}
	return nil // each failure was a key recorded already
}

// HasKey implements driver.KeyDirectory: a find by _id, which FerretDB,
// unlike a range, answers without decoding the documents it passes.
func (d *directory) HasKey(ctx context.Context, key string) (bool, error) {
	err := d.coll.FindOne(ctx, bson.D{{Key: "_id", Value: key}}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil
	}
	d.clock.noteFailure(err)
	return false, wrap(ctx, "look up in "+d.cfg.collection+keysSuffix+" the key", key, err)
}

// KeyOrder implements driver.KeyDirectory: OrderFirstUse on FerretDB,
// OrderBytes elsewhere.
func (d *directory) KeyOrder() driver.KeyOrder {
	if d.platform.isFerret() {
		return driver.OrderFirstUse
	}
	return driver.OrderBytes
}

// ListKeys implements driver.KeyDirectory: one find, and a getMore per
// batch of listBatch keys as the caller goes on.
func (d *directory) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		filter, opts, exact, err := d.keyQuery(q)
		if err != nil {
			yield("", err)
			return
		}
		cur, err := d.coll.Find(ctx, filter, opts)
		if err != nil {
			d.clock.noteFailure(err)
			yield("", wrap(ctx, "list keys of", d.cfg.collection+keysSuffix, err))
			return
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cursorCloseTimeout)
			defer cancel()
			_ = cur.Close(cctx)
		}()
		byBytes := d.KeyOrder() == driver.OrderBytes
		listed := 0
		for (q.Limit == 0 || listed < q.Limit) && cur.Next(ctx) {
			key, ok := cur.Current.Lookup("_id").StringValueOK()
			if !ok {
				continue // not written by dsync
			}
			if !exact && !strings.HasPrefix(key, q.Prefix) {
				if byBytes {
					return // past the keys with the prefix
				}
				continue
			}
			if !yield(key, nil) {
				return
			}
			listed++
		}
		if err := cur.Err(); err != nil {
			d.clock.noteFailure(err)
			yield("", wrap(ctx, "list keys of", d.cfg.collection+keysSuffix, err))
		}
	}
}

// keyQuery is the find of a listing: its filter and options, and whether
// the filter selects exactly the keys with the prefix (else the caller
// filters too).
func (d *directory) keyQuery(q driver.KeyQuery) (filter bson.D, opts *options.FindOptionsBuilder, exact bool, err error) {
	switch {
	case q.Limit < 0:
		return nil, nil, false, fmt.Errorf("dsyncmongo: listing keys: negative limit %d", q.Limit)
	case !utf8.ValidString(q.Prefix) || !utf8.ValidString(q.After):
		return nil, nil, false, fmt.Errorf("%w: listing keys with prefix %q after %q", ErrInvalidKey, q.Prefix, q.After)
	}
	byBytes := d.KeyOrder() == driver.OrderBytes
	if q.After != "" && !byBytes {
		return nil, nil, false, fmt.Errorf("dsyncmongo: listing keys after %q: %w (FerretDB: a listing in any other order reads the whole directory)",
			q.After, driver.ErrAfterUnsupported)
	}
	var bounds bson.D
	switch {
	case q.After != "" && q.After >= q.Prefix:
		bounds = append(bounds, bson.E{Key: "$gt", Value: q.After})
	case q.Prefix != "":
		bounds = append(bounds, bson.E{Key: "$gte", Value: q.Prefix})
	}
	exact = q.Prefix == ""
	if end, ok := prefixEnd(q.Prefix); ok {
		bounds = append(bounds, bson.E{Key: "$lt", Value: end})
		exact = true
	}
	filter = bson.D{}
	if len(bounds) > 0 {
		filter = bson.D{{Key: "_id", Value: bounds}}
	}
	opts = options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(listBatch)
	if q.Limit > 0 {
		opts.SetBatchSize(int32(min(q.Limit, listBatch)))
		if exact {
			opts.SetLimit(int64(q.Limit))
		}
	}
	if byBytes {
		opts.SetSort(bson.D{{Key: "_id", Value: 1}})
	}
	return filter, opts, exact, nil
}

// prefixEnd returns the least string above every string that begins with
// prefix, a valid UTF-8 string: prefix with its last character replaced
// by the next one, the characters that have none (U+10FFFF) dropped
// first. UTF-8 orders strings by bytes as by characters, so the range
// [prefix, end) holds exactly the strings that begin with prefix. ok is
// false for a prefix of U+10FFFF alone, or "": nothing bounds them.
func prefixEnd(prefix string) (end string, ok bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		switch r {
		case utf8.MaxRune:
			continue
		case 0xD7FF: // the surrogates are no characters
			return prefix + "\uE000", true
		}
		return prefix + string(r+1), true
	}
	return "", false
}
