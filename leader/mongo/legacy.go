package leadermongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/leader"
)

// Upgrading from releases that kept the leases apart.
//
// Before leases shared the lock collection, an election's lease was the
// lock "leader/NAME" in a collection of its own (LegacyCollection, with
// its sessions in LegacyCollection + "_sessions"). A candidate of such a
// release and one of this release would not see each other's leases, and
// could both lead. So before each campaign, a candidate reads the legacy
// collection: while a claim of the election there has not ended and its
// session has not expired, Campaign fails with ErrLegacyCandidate. The
// check narrows the window; it cannot close it, since a candidate of the
// older release may start after it: upgrade an election by stopping all
// of its candidates of the older release before starting ones of this
// release.

// LegacyCollection is the collection where older releases kept the
// leadership leases.
const LegacyCollection = "dsync_elections"

// legacyClaims is how many of the newest legacy claims Preflight looks at.
const legacyClaims = 16

// legacyLeases reads the leases older releases kept.
type legacyLeases struct {
	locks, sessions *mongo.Collection
}

// Preflight implements leader.Preflighter, refusing while an older release
// campaigns.
//
// It fails with ErrLegacyCandidate while a candidate of an older release
// holds or waits for election. It prepares the lock store first, as a
// Client's first lock does (nothing once it is prepared). Then it sends
// one read when that release left nothing of election, and a few more
// while it did.
func (b *Store) Preflight(ctx context.Context, election string) error {
	if err := b.prepare(ctx); err != nil {
		return err
	}
	live, err := b.legacy.live(ctx, b, election)
	if err != nil {
		return fmt.Errorf("leadermongo: reading the leases of older releases: %w", err)
	}
	if live {
		return fmt.Errorf("%w (election %q, collection %s): %w", ErrLegacyCandidate, election, b.legacy.locks.Name(), leader.ErrRefused)
	}
	return nil
}

// live reports whether a claim of election among the newest in the
// legacy collection has not ended and its session has not expired.
func (l legacyLeases) live(ctx context.Context, b *Store, election string) (bool, error) {
	cur, err := l.locks.Find(ctx, bson.D{{Key: "key", Value: "leader/" + election}, {Key: "kind", Value: "claim"}},
		options.Find().SetSort(bson.D{{Key: "epoch", Value: -1}}).SetLimit(legacyClaims))
	if err != nil {
		return false, err
	}
	var claims []struct {
		ID      string `bson:"_id"`
		Nonce   string `bson:"nonce"`
		Session string `bson:"session"`
	}
	if err := cur.All(ctx, &claims); err != nil || len(claims) == 0 {
		return false, err
	}
	now, err := b.locks.ServerNow(ctx)
	if err != nil {
		return false, err
	}
	for _, c := range claims {
		ended, err := l.locks.CountDocuments(ctx, bson.D{{Key: "_id", Value: c.ID + "~" + c.Nonce}})
		if err != nil {
			return false, err
		}
		if ended > 0 {
			continue
		}
		n, err := l.sessions.CountDocuments(ctx, bson.D{
			{Key: "$or", Value: bson.A{
				bson.D{{Key: "_id", Value: c.Session}},
				bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: c.Session + "~"}, {Key: "$lt", Value: c.Session + "~:"}}}},
			}},
			{Key: "expiresAt", Value: bson.D{{Key: "$gte", Value: now.Earliest}}},
		})
		if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}
