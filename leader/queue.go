package leader

import (
	"context"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// claimInfo is a claim of a lease's queue as read: the fields of
// statuspage.ClaimInfo, which package leader cannot name (statuspage
// imports leader).
type claimInfo = clienthook.Claim

// readQueue reads the claims of key that have not ended, in the order
// they hold, as statuspage.Reader.Queue does (it only reads).
func readQueue(ctx context.Context, c *dsync.Client, key string) ([]claimInfo, error) {
	return clienthook.ClientReads.(clienthook.Reads[*dsync.Client]).Queue(c, ctx, key)
}
