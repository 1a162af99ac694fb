package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/enginehook"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/statuspage"
)

// testClient is what a program makes of this package: a dsync.Client over
// a Store. The tests reach the store (s) and the Client's protocol calls
// one by one (raw).
type testClient struct {
	*dsync.Client
	s       *Store
	raw     enginehook.Raw
	wakeups bool // the Client follows the store's wake-ups
}

// wakeupsOff is the test option that turns the Client's wake-ups off
// (withoutWakeups()), noting it in testClient.wakeups.
type wakeupsOff struct{}

// withoutWakeups turns the Client's wake-ups off.
func withoutWakeups() wakeupsOff { return wakeupsOff{} }

// newTestClient makes a Store over db and a Client over it. opts are the
// store's Options, the Client's dsync.ClientOptions and test-only
// clienthook.Settings and enginehook.Settings, in any order. Its Client
// takes no direct hints unless opts turn them on: the tests of the
// store's own path (its feed, its commands) would meet hints instead,
// which are on by default where the store is reached over loopback, as
// the test server is.
func newTestClient(db *mongo.Database, opts ...any) (*testClient, error) {
	var (
		sopts []Option
		copts = []dsync.ClientOption{
			dsync.ClientWithIdleAge(dsync.DefaultIdleAge), dsync.ClientWithHints("", ""),
		}
		hooks   clienthook.Settings
		engine  enginehook.Settings
		wakeups = true
	)
	for _, o := range opts {
		switch o := o.(type) {
		case Option:
			sopts = append(sopts, o)
		case func(*config) error:
			sopts = append(sopts, o)
		case dsync.ClientOption:
			copts = append(copts, o)
		case wakeupsOff:
			copts, wakeups = append(copts, dsync.ClientWithWakeups(false)), false
		case enginehook.Settings:
			if o.Chain != nil {
				engine.Chain = o.Chain
			}
			if o.Bug != 0 {
				engine.Bug = o.Bug
			}
		case clienthook.Settings:
			if o.RelockWindow != 0 {
				hooks.RelockWindow = o.RelockWindow
			}
			if o.WrapStore != nil {
				hooks.WrapStore = o.WrapStore
			}
			if o.JudgedOver != nil {
				hooks.JudgedOver = o.JudgedOver
			}
		case nil:
			return nil, errors.New("dsyncmongo: nil option")
		default:
			panic(fmt.Sprintf("newTestClient: option of type %T", o))
		}
	}
	if engine.Chain != nil && engine.Chain.Span > 0 && engine.Chain.Span < dsync.DefaultTTL {
		// A short span (fastPrune) allows no longer lease: the default
		// TTL comes down to it, unless opts set one.
		copts = append([]dsync.ClientOption{dsync.ClientWithTTL(engine.Chain.Span)}, copts...)
	}
	s, err := NewStore(db, sopts...)
	if err != nil {
		return nil, err
	}
	tc := &testClient{s: s, wakeups: wakeups}
	engine.Raw = func(r enginehook.Raw) { tc.raw = r }
	hooked := clienthook.Wrap[driver.Store](&enginehook.Store{Store: s, Settings: engine}, hooks)
	c, err := dsync.NewClient(hooked, copts...)
	if err != nil {
		return nil, fmt.Errorf("dsyncmongo: %w", err)
	}
	tc.Client = c
	return tc, nil
}

// withRelockWindow sets how long a Mutex that locks again after a
// takeover waits at most for the owner it took over from.
func withRelockWindow(d time.Duration) clienthook.Settings {
	return clienthook.Settings{RelockWindow: d}
}

// withChain sets the protocol's timing constants, so that a test can see
// pruning within seconds.
func withChain(c queue.Config) enginehook.Settings { return enginehook.Settings{Chain: &c} }

// stopWhenJudged stops the goroutine that first judges a session of the
// Client over, right after its holds' Lost channels closed and before
// their loss is reported, until resume is called; judged is closed when
// it stops there.
func stopWhenJudged() (s clienthook.Settings, judged <-chan struct{}, resume func()) {
	stopped, resumed := make(chan struct{}), make(chan struct{})
	var stop, release sync.Once
	s.JudgedOver = func() {
		stop.Do(func() {
			close(stopped)
			<-resumed
		})
	}
	return s, stopped, func() { release.Do(func() { close(resumed) }) }
}

// withBug plants a bug in the Client's engine.
func withBug(b queue.Bug) enginehook.Settings { return enginehook.Settings{Bug: b} }

// Collection is the store's Collection.
func (b *testClient) Collection(name string) *mongo.Collection { return b.s.Collection(name) }

// ServerTime is the store's ServerNow.
func (b *testClient) ServerTime(ctx context.Context) (clockcheck.Interval, error) {
	return b.s.ServerNow(ctx)
}

// LockInfo describes who holds a key, or waits first for it.
type LockInfo struct {
	Key                   string
	Token                 uint64
	Owner, Host           string
	PID                   int
	AcquiredAt, ExpiresAt time.Time
	Live                  bool
}

// errNoLock: Current found nothing holding or waiting for the key.
var errNoLock = errors.New("dsyncmongo: no lock for key")

// Current reads the claim at the head of key's queue, through the Client.
func (b *testClient) Current(ctx context.Context, key string) (LockInfo, error) {
	q, err := statuspage.NewReader(b.Client).Queue(ctx, key)
	if err != nil {
		return LockInfo{}, err
	}
	if len(q) == 0 {
		return LockInfo{}, fmt.Errorf("%w %q", errNoLock, key)
	}
	h := q[0]
	return LockInfo{
		Key: key, Token: h.Token, Owner: h.Owner, Host: h.Host, PID: h.PID,
		AcquiredAt: h.QueuedAt, ExpiresAt: h.ExpiresAt, Live: true,
	}, nil
}
