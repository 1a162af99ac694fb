package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// Stores that misbehave on purpose, each wrapping an in-memory store, and
// the Clients tests run on them.

// newClient returns a Client over store, closed when the test ends.
func newClient(t *testing.T, store driver.Store, opts ...dsync.ClientOption) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(store, append([]dsync.ClientOption{dsync.ClientWithPollInterval(100 * time.Millisecond), dsync.ClientWithIdleAge(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// holder returns the claim at the head of key's queue, read through c.
func holder(c *dsync.Client, key string) (dsync.ClaimInfo, bool) {
	q, err := c.Queue(context.Background(), key)
	if err != nil || len(q) == 0 {
		return dsync.ClaimInfo{}, false
	}
	return q[0], true
}

var errDown = errors.New("store unreachable")

// flaky fails the calls a test switches off.
type flaky struct {
	*memory.Store
	acquireDown atomic.Bool // sessions and claims cannot be inserted
	renewDown   atomic.Bool // renewals fail
	releaseDown atomic.Bool // release markers fail
	renewCalls  atomic.Int64
	claims      atomic.Int64  // claim inserts sent
	acquireWait time.Duration // delay before a claim's reply
	// gateInserts: gates sent one per request (Insert); gateBatches and
	// gatesBatched: requests of InsertEach, and the gates in them.
	gateInserts, gateBatches, gatesBatched atomic.Int64
}

// A session's generation above 0 is inserted by a renewal (after one of
// unknown outcome).
func (f *flaky) InsertSession(ctx context.Context, s driver.Session) error {
	if s.Gen > 0 {
		f.renewCalls.Add(1)
	}
	if f.acquireDown.Load() && s.Gen == 0 || f.renewDown.Load() && s.Gen > 0 {
		return errDown
	}
	return f.Store.InsertSession(ctx, s)
}

func (f *flaky) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	f.claims.Add(1)
	if f.acquireDown.Load() {
		return 0, errDown
	}
	dup, err := f.Store.InsertOrdered(ctx, docs)
	if f.acquireWait > 0 {
		time.Sleep(f.acquireWait)
	}
	return dup, err
}

func (f *flaky) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	f.renewCalls.Add(1)
	if f.renewDown.Load() {
		return false, errDown
	}
	return f.Store.RenewSession(ctx, id, gen, expires)
}

// InsertEach counts the requests and the gates it sends.
func (f *flaky) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	f.gateBatches.Add(1)
	f.gatesBatched.Add(int64(len(docs)))
	return f.Store.InsertEach(ctx, docs)
}

func (f *flaky) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindGate {
		f.gateInserts.Add(1)
	}
	if d.Kind == driver.KindRelease && f.releaseDown.Load() {
		return errDown
	}
	return f.Store.Insert(ctx, d)
}

// forgetful answers renewals as if the session did not exist once gone is
// set.
type forgetful struct {
	*memory.Store
	gone atomic.Bool
}

func (f *forgetful) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if f.gone.Load() {
		return false, nil
	}
	return f.Store.RenewSession(ctx, id, gen, expires)
}

// hanging is a store whose renewals and end markers block, while hang is
// set, until stuck is closed or their context ends.
type hanging struct {
	*memory.Store
	hang  atomic.Bool
	stuck chan struct{}
}

func (h *hanging) block(ctx context.Context) error {
	if !h.hang.Load() {
		return nil
	}
	select {
	case <-h.stuck:
		return errDown
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (h *hanging) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if err := h.block(ctx); err != nil {
		return false, err
	}
	return h.Store.RenewSession(ctx, id, gen, expires)
}

func (h *hanging) InsertSession(ctx context.Context, s driver.Session) error {
	if s.Gen > 0 {
		if err := h.block(ctx); err != nil {
			return err
		}
	}
	return h.Store.InsertSession(ctx, s)
}

func (h *hanging) Insert(ctx context.Context, d driver.Doc) error {
	if err := h.block(ctx); err != nil {
		return err
	}
	return h.Store.Insert(ctx, d)
}

// unanswered is a store whose sessions wait for their context to end and
// then fail as a driver does, wrapping the context's error.
type unanswered struct{ *memory.Store }

func (unanswered) InsertSession(ctx context.Context, _ driver.Session) error {
	<-ctx.Done()
	return fmt.Errorf("no server answered: %w", ctx.Err())
}

// racing makes the first lose claims lose their race: another process's
// claim takes the epoch first, and is withdrawn at once (unless keep).
type racing struct {
	*memory.Store
	lose atomic.Int64
	lost atomic.Int64
	keep atomic.Bool // the rival's claims stay live (not withdrawn)
}

func (r *racing) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	if d := docs[0]; d.Kind == driver.KindClaim && r.lost.Load() < r.lose.Load() {
		n := r.lost.Add(1)
		rival := d
		rival.Nonce, rival.Session, rival.Owner = fmt.Sprint("rival", n), "rival", "rival"
		shadow := driver.Doc{ID: driver.ShadowID(d.Key, d.Epoch, rival.Nonce), Key: d.Key, Epoch: d.Epoch,
			Kind: driver.KindShadow, Nonce: rival.Nonce, Session: rival.Session, Sent: d.Sent}
		end := driver.Doc{ID: driver.EndID(d.Key, d.Epoch, rival.Nonce), Key: d.Key, Epoch: d.Epoch,
			Kind: driver.KindWithdraw, Nonce: rival.Nonce, Session: rival.Session, Sent: d.Sent}
		if _, err := r.Store.InsertOrdered(ctx, []driver.Doc{rival, shadow}); err != nil {
			return 0, err
		}
		if !r.keep.Load() {
			if err := r.Store.Insert(ctx, end); err != nil {
				return 0, err
			}
		}
	}
	return r.Store.InsertOrdered(ctx, docs)
}
