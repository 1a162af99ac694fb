package leadermongo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// Operator directives (operator.Directives) live in the members collection,
// one document each, _id "<election>/<Directive.Key>"
// ("jobs/#drain/<member>/<gen>", "jobs/#transfer/<term>/<n>"). They are
// never updated: an insert sent twice lands once (duplicate key), and a
// late one adds a record that the rules of operator.Directive make
// harmless. Drains are never deleted; a leader deletes the transfer
// requests of the terms before its own (PruneTransferRequests), which no
// leader acts on. They have no "election" field, so no member query
// (Member, Members, DeleteMember) ever matches one; listing them is one
// range find on _id, as is listing one term's transfer requests
// (TransferRequests), and MembersAndDirectives reads them with the
// members in one find.

var (
	_ operator.Directives       = (*Store)(nil)
	_ operator.TransferRequests = (*Store)(nil)
)

// directiveDoc is one operator directive.
type directiveDoc struct {
	ID        string    `bson:"_id"`
	Directive string    `bson:"directive"` // the election's name
	Kind      string    `bson:"kind"`
	Member    string    `bson:"member"`
	Gen       int64     `bson:"gen,omitempty"`
	Drain     bool      `bson:"drain,omitempty"`
	Term      int64     `bson:"term,omitempty"`
	By        string    `bson:"by,omitempty"`
	Reason    string    `bson:"reason,omitempty"`
	At        time.Time `bson:"at"`
}

// PutDirective implements operator.Directives: one insert, stamped with the
// latest possible server time at sending.
func (b *Store) PutDirective(ctx context.Context, election string, d operator.Directive) error {
	now, err := b.locks.ServerNow(ctx)
	if err != nil {
		return err
	}
	id := election + "/" + d.Key()
	_, err = b.members.InsertOne(ctx, &directiveDoc{
		ID: id, Directive: election, Kind: string(d.Kind), Member: d.Member,
		Gen: int64(d.Gen), Drain: d.Drain, Term: int64(d.Term), By: d.By, Reason: d.Reason,
		At: now.Latest.Truncate(time.Millisecond),
	})
	switch {
	case mongo.IsDuplicateKeyError(err):
		return fmt.Errorf("%w: %s", operator.ErrDirectiveExists, id)
	case err != nil:
		return fmt.Errorf("leadermongo: insert directive: %w", err)
	}
	return nil
}

// Directives implements operator.Directives: one find over the range of
// _ids of election's directives.
func (b *Store) Directives(ctx context.Context, election string) ([]operator.Directive, error) {
	// '#' + 1 is '$': the range holds every _id that begins "<election>/#".
	cur, err := b.members.Find(ctx, bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gte", Value: election + "/#"}, {Key: "$lt", Value: election + "/$"}}},
		{Key: "directive", Value: election},
	})
	if err != nil {
		return nil, fmt.Errorf("leadermongo: list directives: %w", err)
	}
	var docs []directiveDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("leadermongo: list directives: %w", err)
	}
	return directivesOf(docs)
}

// TransferRequests implements operator.TransferRequests: one find over the
// range of _ids of election's requests of term. The range,
// "<election>/#transfer/<term>" up to "<election>/#transfer/<term>0"
// ('/' + 1 is '0'), holds "#transfer/<term>" and "#transfer/<term>/<n>"
// and no other term's (its digits sort at or after '0').
func (b *Store) TransferRequests(ctx context.Context, election string, term uint64) ([]operator.Directive, error) {
	prefix := election + "/" + operator.Directive{Kind: operator.DirectiveTransfer, Term: term}.Key()
	cur, err := b.members.Find(ctx, bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gte", Value: prefix}, {Key: "$lt", Value: prefix + "0"}}},
		{Key: "directive", Value: election},
		{Key: "term", Value: int64(term)},
	})
	if err != nil {
		return nil, fmt.Errorf("leadermongo: list transfer requests: %w", err)
	}
	var docs []directiveDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("leadermongo: list transfer requests: %w", err)
	}
	return directivesOf(docs)
}

// PruneTransferRequests implements operator.TransferRequests with one delete
// over a range of _ids.
// The range is that of election's transfer requests of the terms before
// term: "<election>/#transfer/" up to "<election>/#transfer0".
func (b *Store) PruneTransferRequests(ctx context.Context, election string, term uint64) error {
	prefix := election + "/#transfer/"
	_, err := b.members.DeleteMany(ctx, bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gte", Value: prefix}, {Key: "$lt", Value: election + "/#transfer0"}}},
		{Key: "directive", Value: election},
		{Key: "kind", Value: string(operator.DirectiveTransfer)},
		{Key: "term", Value: bson.D{{Key: "$lt", Value: int64(term)}}},
	})
	if err != nil {
		return fmt.Errorf("leadermongo: delete transfer requests: %w", err)
	}
	return nil
}

// directivesOf returns the directives docs hold.
func directivesOf(docs []directiveDoc) ([]operator.Directive, error) {
	out := make([]operator.Directive, 0, len(docs))
	for _, d := range docs {
		if d.Gen < 0 || d.Term < 0 {
			return nil, errors.New("leadermongo: list directives: a negative generation or term")
		}
		out = append(out, operator.Directive{Kind: operator.DirectiveKind(d.Kind), Member: d.Member, Gen: uint64(d.Gen),
			Drain: d.Drain, Term: uint64(d.Term), By: d.By, Reason: d.Reason, At: d.At})
	}
	return out, nil
}

// MembersAndDirectives returns what Members and Directives return, by one
// find.
// A Partition member reads both once per heartbeat, and so pays no more
// reads for drains than before them.
func (b *Store) MembersAndDirectives(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, []operator.Directive, error) {
	now, err := b.locks.ServerNowRead(ctx)
	if err != nil {
		return nil, nil, err
	}
	cur, err := b.members.Find(ctx, bson.D{{Key: "$or", Value: bson.A{
		bson.D{
			{Key: "election", Value: election},
			{Key: "lastSeen", Value: bson.D{{Key: "$gte", Value: now.Earliest.Add(-maxAge)}}},
		},
		bson.D{
			{Key: "_id", Value: bson.D{{Key: "$gte", Value: election + "/#"}, {Key: "$lt", Value: election + "/$"}}},
			{Key: "directive", Value: election},
		},
	}}})
	if err != nil {
		return nil, nil, fmt.Errorf("leadermongo: list members: %w", err)
	}
	var raws []bson.Raw
	if err := cur.All(ctx, &raws); err != nil {
		return nil, nil, fmt.Errorf("leadermongo: list members: %w", err)
	}
	var docs []memberDoc
	var dirs []directiveDoc
	for _, raw := range raws {
		if _, err := raw.LookupErr("directive"); err == nil {
			var d directiveDoc
			if err := bson.Unmarshal(raw, &d); err != nil {
				return nil, nil, fmt.Errorf("leadermongo: list directives: %w", err)
			}
			dirs = append(dirs, d)
			continue
		}
		var d memberDoc
		if err := bson.Unmarshal(raw, &d); err != nil {
			return nil, nil, fmt.Errorf("leadermongo: list members: %w", err)
		}
		docs = append(docs, d)
	}
	ds, err := directivesOf(dirs)
	if err != nil {
		return nil, nil, err
	}
	return latestOfEach(docs), ds, nil
}

// latestOfEach returns, of each member's documents, the one of the highest
// Seq, ordered by member ID, as Members does. A member's stamps never fall
// as its Seq rises, so an age filter that keeps any of its documents
// keeps its latest.
func latestOfEach(docs []memberDoc) []leader.Member {
	slices.SortFunc(docs, func(a, b memberDoc) int {
		if c := strings.Compare(a.Member, b.Member); c != 0 {
			return c
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
	members := make([]leader.Member, 0, len(docs))
	for i := range docs {
		if i > 0 && docs[i].Member == docs[i-1].Member {
			continue // an older generation
		}
		members = append(members, docs[i].member())
	}
	return members
}
