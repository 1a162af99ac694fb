package leadermongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"

	"github.com/go-dsync/dsync/leader"
)

// ConfirmedMembers implements leader.ConfirmedMembers: Members, read at
// read concern majority.
// So it shows no member status that a failover could roll back. From a
// primary that still is one, it shows every status write the lock
// store's write concern (majority by default) confirmed.
// leader.WithVersionRule reads it before a term begins.
func (b *Store) ConfirmedMembers(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	coll := b.members.Clone(options.Collection().SetReadConcern(readconcern.Majority()))
	return b.listMembers(ctx, coll, election, maxAge)
}
