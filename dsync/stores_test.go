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
	"github.com/go-dsync/dsync/statuspage"
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
func holder(c *dsync.Client, key string) (statuspage.ClaimInfo, bool) {
	q, err := statuspage.NewReader(c).Queue(context.Background(), key)
	if err != nil || len(q) == 0 {
		return statuspage.ClaimInfo{}, false
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

func newFlaky(store *memory.Store) *flaky {
	f := &flaky{}
	f.Store = store.Intercept(f.call)
	return f
}

// call counts and fails what f's switches say. A session's generation
// above 0 is inserted by a renewal (after one of unknown outcome).
func (f *flaky) call(_ context.Context, c memory.Call, serve func() error) error {
	switch c.Op {
	case "InsertSession":
		renewal := c.Session.Gen > 0
		if renewal {
			f.renewCalls.Add(1)
		}
		if f.acquireDown.Load() && !renewal || f.renewDown.Load() && renewal {
			return errDown
		}
	case "InsertOrdered":
		f.claims.Add(1)
		if f.acquireDown.Load() {
			return errDown
		}
		if f.acquireWait > 0 {
			err := serve()
			time.Sleep(f.acquireWait)
			return err
		}
	case "RenewSession", "RenewSessionUp":
		f.renewCalls.Add(1)
		if f.renewDown.Load() {
			return errDown
		}
	case "InsertEach":
		f.gateBatches.Add(1)
		f.gatesBatched.Add(int64(len(c.Docs)))
	case "Insert":
		if c.Docs[0].Kind == driver.KindGate {
			f.gateInserts.Add(1)
		}
		if c.Docs[0].Kind == driver.KindRelease && f.releaseDown.Load() {
			return errDown
		}
	}
	return nil
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

// Roles: the store's, without the record of up-time (withoutUptime).
func (f *forgetful) Roles() driver.Roles { return withoutUptime(f.Store.Roles()) }

// hanging is a store whose renewals and end markers block, while hang is
// set, until stuck is closed or their context ends.
type hanging struct {
	*memory.Store
	hang  atomic.Bool
	stuck chan struct{}
}

func newHanging() *hanging {
	h := &hanging{stuck: make(chan struct{})}
	h.Store = memory.New().Intercept(func(ctx context.Context, c memory.Call, _ func() error) error {
		if !h.hang.Load() || c.Op != "RenewSession" && c.Op != "RenewSessionUp" && c.Op != "Insert" && (c.Op != "InsertSession" || c.Session.Gen == 0) {
			return nil
		}
		select {
		case <-h.stuck:
			return errDown
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	return h
}

// unanswered is a store whose sessions wait for their context to end and
// then fail as a driver does, wrapping the context's error.
type unanswered struct{ *memory.Store }

// Roles: the store's, without the record of up-time (withoutUptime).
func (u unanswered) Roles() driver.Roles { return withoutUptime(u.Store.Roles()) }

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

// renewalAsOne names a session's renewal with the record of up-time
// (RenewSessionUp, a Client's with an outage grace: the default) as the
// renewal it is, so that counts and faults by operation treat both alike.
func renewalAsOne(op string) string {
	if op == "RenewSessionUp" {
		return "RenewSession"
	}
	return op
}

// withoutUptime returns a fake's roles without the record of up-time
// (driver.UptimeStore). A Client with an outage grace, the default,
// renews through that role, past a fake that intercepts RenewSession;
// without it the Client has no grace and renews through RenewSession,
// the behaviour the fake's tests are about.
func withoutUptime(r driver.Roles) driver.Roles {
	r.Uptime = nil
	return r
}
