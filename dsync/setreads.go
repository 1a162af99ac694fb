package dsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// A Client's reads for the deadlock detection of lock sets, served to
// package dsync/lockset through setcore.Reads: each key's queue as dsync
// status reads and judges it (readQueue), with the sets its claims name,
// and the store's wait notes; and its writes of notes and deadlock
// records (setcore.Record), which no rule of the queue reads.

func init() {
	setcore.Reads = func(v any) setcore.Reader { return setReads{v.(*Client)} }
	setcore.Record = func(v any) setcore.Records { return setReads{v.(*Client)} }
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
		out[i] = setcore.Claim{ClaimRef: driver.ClaimRef{Key: d.Key, Epoch: d.Epoch, Nonce: d.Nonce}, Waiter: d.Waiter, Session: d.Session,
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

// errNoRecords: the store keeps no notes or deadlock records.
var errNoRecords = fmt.Errorf("dsync: the store keeps no lock sets' notes or deadlock records: %w", errors.ErrUnsupported)

func (r setReads) Now() time.Time { return r.c.store.ServerTime().Latest }

func (r setReads) PutWait(ctx context.Context, w driver.Wait) error {
	if r.c.roles.Waits == nil {
		return errNoRecords
	}
	w.At, w.PID = r.Now(), os.Getpid()
	w.Host, _ = os.Hostname()
	return r.c.roles.Waits.PutWait(ctx, w)
}

func (r setReads) PutDeadlock(ctx context.Context, d driver.Deadlock) error {
	if r.c.roles.Deadlocks == nil {
		return errNoRecords
	}
	d.At, d.PID = r.Now(), os.Getpid()
	d.Host, _ = os.Hostname()
	return r.c.roles.Deadlocks.PutDeadlock(ctx, d)
}

func (r setReads) Broken(e event.Deadlock) {
	r.c.observe(func(o *event.Observer) {
		if o.DeadlockBroken != nil {
			o.DeadlockBroken(e)
		}
	})
}
