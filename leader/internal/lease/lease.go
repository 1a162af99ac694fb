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
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Namespace is the dsync namespace (dsync.WithNamespace) of the leases.
const Namespace = "election"

// ErrNoLeader is leader.ErrNoLeader, the same value: nobody leads.
var ErrNoLeader = errors.New("leader: no leader")

// Key is the key, as stored, whose holder leads election.
func Key(election string) string { return clienthook.NamespacedKey(Namespace, election) }

// A Claim is a claim of a lease's queue as read: the fields of
// statuspage.ClaimInfo, which neither leader nor operator can name
// (statuspage imports both).
type Claim = clienthook.Claim

// Queue reads the claims of key that have not ended, in the order they
// hold, as statuspage.Reader.Queue does (it only reads).
func Queue(ctx context.Context, c *dsync.Client, key string) ([]Claim, error) {
	return clienthook.ClientReads.(clienthook.Reads[*dsync.Client, driver.Revocation, driver.Stall]).Queue(c, ctx, key)
}

// Holder returns the claim that leads election now, read through c: the
// first claim of its key's queue that holds. Claims before it whose lease
// expired (Claim.Expired) lead no more, though nothing has ended them
// yet (a read does not). It returns an error wrapping ErrNoLeader when no
// claim holds.
func Holder(ctx context.Context, c *dsync.Client, election string) (Claim, error) {
	q, err := Queue(ctx, c, Key(election))
	if err != nil {
		return Claim{}, err
	}
	i := slices.IndexFunc(q, func(ci Claim) bool { return ci.Holds })
	if i < 0 {
		return Claim{}, fmt.Errorf("%w in %q", ErrNoLeader, election)
	}
	return q[i], nil
}
