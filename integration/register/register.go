// Package register is the resource the integration tests protect with a
// lock: a counter that workers increment by read-modify-write while they
// hold the lock, in two variants.
//
// Fenced rejects every access carrying a fencing token lower than the
// highest it has seen. Its state is a chain of immutable versions
// {reg, ver, token, value}, one document per version with a
// deterministic _id, so an append succeeds only if that version does not
// exist yet: a unique-index insert, the one primitive that is atomic on
// every MongoDB-compatible store (FerretDB's conditional updates and
// findAndModify are not). Every access, reads included, first makes sure
// the newest version carries the caller's token, appending a "fence"
// version if needed; so a token is "seen" by the register as soon as its
// holder touches it, and a stale holder's later write finds a newer token
// at the head and is rejected. On a real MongoDB a single conditional
// update ({token: {$lte: t}}) would do; this is what it takes on FerretDB.
//
// Unfenced is a plain document overwritten by each write: what a resource
// that ignores tokens looks like. A holder paused between its read and
// its write overwrites a newer holder's increment: the negative control
// that shows why tokens exist.
package register

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Collection is where registers live.
const Collection = "register"

// ErrStale is returned when the register has seen a higher token than the
// caller's.
var ErrStale = errors.New("register: stale fencing token")

// Register is a counter protected by a lock.
type Register interface {
	// Read returns the value, as seen by the holder of token.
	Read(ctx context.Context, token uint64) (int64, error)
	// Write stores v, computed from the value the last Read under the
	// same token returned; wid identifies the write. It returns ErrStale
	// if rejected; any other error means the outcome is unknown.
	Write(ctx context.Context, token uint64, v int64, wid string) error
}

// Version is one version of a fenced register.
type Version struct {
	ID    string `bson:"_id"`
	Reg   string `bson:"reg"`
	Ver   int64  `bson:"ver"`
	Token int64  `bson:"token"`
	Value int64  `bson:"value"`
	Kind  string `bson:"kind"` // "fence" or "write"
	WID   string `bson:"wid,omitempty"`
}

// Fenced is a register that rejects stale tokens. Its methods are not
// safe for concurrent use (one holder uses it at a time).
type Fenced struct {
	coll *mongo.Collection
	name string
	// known is a version known to exist (0: none), where the search for
	// the head starts: versions are contiguous and never deleted.
	known int64
}

// NewFenced returns the fenced register name in db.
func NewFenced(db *mongo.Database, name string) *Fenced {
	return &Fenced{coll: db.Collection(Collection), name: name}
}

func (r *Fenced) id(ver int64) string { return r.name + "@" + strconv.FormatInt(ver, 10) }

func (r *Fenced) get(ctx context.Context, ver int64) (Version, bool, error) {
	var v Version
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: r.id(ver)}}).Decode(&v)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Version{}, false, nil
	}
	return v, err == nil, err
}

// head finds the newest version by point reads (the query FerretDB answers
// without scanning): gallop up from a known version, then bisect.
func (r *Fenced) head(ctx context.Context) (Version, error) {
	lo := r.known // exists (or is 0)
	var loV Version
	if lo > 0 {
		v, ok, err := r.get(ctx, lo)
		if err != nil {
			return Version{}, err
		}
		if !ok {
			return Version{}, fmt.Errorf("register %s: version %d vanished", r.name, lo)
		}
		loV = v
	}
	hi := int64(-1) // first version known not to exist
	for step := int64(1); hi < 0; step *= 2 {
		v, ok, err := r.get(ctx, lo+step)
		if err != nil {
			return Version{}, err
		}
		if !ok {
			hi = lo + step
			break
		}
		lo, loV = lo+step, v
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		v, ok, err := r.get(ctx, mid)
		if err != nil {
			return Version{}, err
		}
		if ok {
			lo, loV = mid, v
		} else {
			hi = mid
		}
	}
	r.known = lo
	return loV, nil // Ver 0, Token 0, Value 0 when empty
}

func (r *Fenced) appendVersion(ctx context.Context, head Version, token uint64, value int64, kind, wid string) error {
	v := Version{ID: r.id(head.Ver + 1), Reg: r.name, Ver: head.Ver + 1, Token: int64(token), Value: value, Kind: kind, WID: wid}
	_, err := r.coll.InsertOne(ctx, v)
	if err == nil {
		r.known = v.Ver
	}
	return err
}

// Read implements Register: it makes the register see token, then
// returns the newest value.
func (r *Fenced) Read(ctx context.Context, token uint64) (int64, error) {
	for {
		head, err := r.head(ctx)
		if err != nil {
			return 0, err
		}
		switch {
		case uint64(head.Token) > token:
			return 0, fmt.Errorf("%w: %d, the register has seen %d", ErrStale, token, head.Token)
		case uint64(head.Token) == token:
			return head.Value, nil
		}
		err = r.appendVersion(ctx, head, token, head.Value, "fence", "")
		switch {
		case err == nil:
			return head.Value, nil
		case mongo.IsDuplicateKeyError(err):
			continue // someone appended first: look again
		default:
			return 0, err
		}
	}
}

// Write implements Register.
func (r *Fenced) Write(ctx context.Context, token uint64, v int64, wid string) error {
	for {
		head, err := r.head(ctx)
		if err != nil {
			return err
		}
		switch {
		case uint64(head.Token) > token:
			return fmt.Errorf("%w: %d, the register has seen %d", ErrStale, token, head.Token)
		case uint64(head.Token) < token:
			return fmt.Errorf("register %s: write with token %d, which no read registered (head has %d)", r.name, token, head.Token)
		case head.Value != v-1:
			return fmt.Errorf("register %s: write of %d under token %d, but the head holds %d", r.name, v, token, head.Value)
		}
		err = r.appendVersion(ctx, head, token, v, "write", wid)
		if mongo.IsDuplicateKeyError(err) {
			continue
		}
		return err
	}
}

// Versions returns every version of the register, in order.
func (r *Fenced) Versions(ctx context.Context) ([]Version, error) {
	cur, err := r.coll.Find(ctx, bson.D{{Key: "reg", Value: r.name}})
	if err != nil {
		return nil, err
	}
	var vs []Version
	if err := cur.All(ctx, &vs); err != nil {
		return nil, err
	}
	slices.SortFunc(vs, func(a, b Version) int { return int(a.Ver - b.Ver) })
	return vs, nil
}

// Verify checks a fenced register's chain: versions 1..n, tokens never
// decreasing, a fence keeping the value, a write adding exactly one. It
// returns the final value, the ids of the applied writes, and what is
// wrong.
func Verify(vs []Version) (final int64, applied map[string]bool, problems []string) {
	applied = make(map[string]bool)
	var prev Version
	for i, v := range vs {
		if v.Ver != int64(i+1) {
			problems = append(problems, fmt.Sprintf("version %d where %d was expected", v.Ver, i+1))
		}
		if v.Token < prev.Token {
			problems = append(problems, fmt.Sprintf("version %d has token %d after token %d", v.Ver, v.Token, prev.Token))
		}
		switch v.Kind {
		case "fence":
			if v.Value != prev.Value {
				problems = append(problems, fmt.Sprintf("fence version %d changed the value %d to %d", v.Ver, prev.Value, v.Value))
			}
		case "write":
			if v.Value != prev.Value+1 {
				problems = append(problems, fmt.Sprintf("write %s (version %d, token %d) stored %d after %d: lost update",
					v.WID, v.Ver, v.Token, v.Value, prev.Value))
			}
			applied[v.WID] = true
		default:
			problems = append(problems, fmt.Sprintf("version %d has kind %q", v.Ver, v.Kind))
		}
		prev = v
	}
	return prev.Value, applied, problems
}

// Unfenced is a register that ignores tokens: the last write wins.
type Unfenced struct {
	coll *mongo.Collection
	name string
}

// NewUnfenced returns the unfenced register name in db.
func NewUnfenced(db *mongo.Database, name string) *Unfenced {
	return &Unfenced{coll: db.Collection(Collection), name: name}
}

type plainDoc struct {
	ID    string `bson:"_id"`
	Value int64  `bson:"value"`
	Token int64  `bson:"token"`
	WID   string `bson:"wid"`
}

// Read implements Register; the token is ignored.
func (r *Unfenced) Read(ctx context.Context, _ uint64) (int64, error) {
	var d plainDoc
	err := r.coll.FindOne(ctx, bson.D{{Key: "_id", Value: r.name}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return d.Value, err
}

// Write implements Register: it overwrites whatever is there.
func (r *Unfenced) Write(ctx context.Context, token uint64, v int64, wid string) error {
	_, err := r.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: r.name}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: v}, {Key: "token", Value: int64(token)}, {Key: "wid", Value: wid}}}},
		options.UpdateOne().SetUpsert(true))
	return err
}

// Value returns the current value.
func (r *Unfenced) Value(ctx context.Context) (int64, error) { return r.Read(ctx, 0) }
