// Package lease is where an election's lease lives, shared by package
// leader, which takes it, and package operator, which reads who holds it
// without an Election.
package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-dsync/dsync/dsync"
)

// Namespace is the dsync namespace (dsync.WithNamespace) of the leases.
const Namespace = "election"

// ErrNoLeader is leader.ErrNoLeader, the same value: nobody leads.
var ErrNoLeader = errors.New("leader: no leader")

// Key is the key, as stored, whose holder leads election.
func Key(election string) string { return dsync.NamespacedKey(Namespace, election) }

// Holder returns the claim that leads election now, read through c: the
// first claim of its key's queue that holds. Claims before it whose lease
// expired (ClaimInfo.Expired) lead no more, though nothing has ended them
// yet (a read does not). It returns an error wrapping ErrNoLeader when no
// claim holds.
func Holder(ctx context.Context, c *dsync.Client, election string) (dsync.ClaimInfo, error) {
	q, err := c.Queue(ctx, Key(election))
	if err != nil {
		return dsync.ClaimInfo{}, err
	}
	i := slices.IndexFunc(q, func(ci dsync.ClaimInfo) bool { return ci.Holds })
	if i < 0 {
		return dsync.ClaimInfo{}, fmt.Errorf("%w in %q", ErrNoLeader, election)
	}
	return q[i], nil
}
