package dsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// A Client's reads for the deadlock detection of lock sets, served to
// package dsync/lockset through setcore.Reads: each key's queue as dsync
// status reads and judges it (readQueue), with the sets its claims name,
// and the store's wait notes. They only read.

func init() {
	setcore.Reads = func(v any) setcore.Reader { return setReads{v.(*Client)} }
}

type setReads struct{ c *Client }

func (r setReads) Queue(ctx context.Context, key string) ([]setcore.Claim, error) {
	if err := r.c.prepareRead(ctx); err != nil {
		return nil, err
	}
	docs, q, err := r.c.judgedQueue(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]setcore.Claim, len(docs))
	for i, d := range docs {
		out[i] = setcore.Claim{ClaimRef: driver.ClaimRef{Key: d.Key, Epoch: d.Epoch, Nonce: d.Nonce}, Waiter: d.Waiter,
			Shared: d.Mode == queue.Shared, Holds: q[i].Holds, Expired: q[i].Expired}
	}
	return out, nil
}

func (r setReads) LatestWait(ctx context.Context, set string) (driver.Wait, bool, error) {
	if r.c.roles.Waits == nil {
		return driver.Wait{}, false, fmt.Errorf("dsync: the store keeps no wait notes: %w", errors.ErrUnsupported)
	}
	if err := r.c.prepareStoreRead(ctx); err != nil {
		return driver.Wait{}, false, err
	}
	return r.c.roles.Waits.LatestWait(ctx, set)
}
