package dsync

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/keydir"

	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/dsync/internal/statusread"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/suspend"
)

// SuspendClock returns the system clock with the machine's suspended time
// counted by c instead of suspend.Process: a test's suspend.Fake.
func SuspendClock(c *suspend.Counter) lease.Clock { return systemClock{c} }

// WithClock sets a Client's clock, as clienthook's Settings.Clock does
// for the tests of other packages.
func WithClock(clock lease.Clock) ClientOption {
	return func(c *clientConfig) error {
		if clock == nil {
			return errors.New("dsync: nil clock")
		}
		c.lease.Clock = clock
		return nil
	}
}

// Quiet gives a primitive a logger that discards, over its Client's.
var Quiet = withLogger(slog.New(slog.DiscardHandler))

// WithErrorHandler gives a primitive an error handler of its own, over its
// Client's.
func WithErrorHandler(f func(error)) Option { return withErrorHandler(f) }

// Owner is the owner identity p claims under (clienthook.OwnerOf).
func Owner(p any) string { return clienthook.OwnerOf(p) }

// Held returns the units s holds.
func (s *Semaphore) Held() int64 { return s.holds.weight() }

// How a failed put of the directory of keys is tried again.
const (
	PutRetries = keydir.PutRetries
	PutPause   = keydir.PutPause
)

// ListAhead is how many keys' queues List reads at once, at most.
const ListAhead = statusread.ListAhead

// MemClient is a Client on a store in memory, with its process's fault
// switches (memory.Process), for the tests of this package.
type MemClient struct {
	*Client
	Proc *memory.Process
}

// NewMemClient returns a MemClient on a store of its own. It polls every
// 100 ms, logs nothing and does not sweep, unless opts say otherwise.
func NewMemClient(opts ...ClientOption) *MemClient { return NewMemClientOn(memory.New(), opts...) }

// NewMemClientOn returns a MemClient on store, one simulated process of
// those that share it.
func NewMemClientOn(store *memory.Store, opts ...ClientOption) *MemClient {
	p := store.Process()
	opts = append([]ClientOption{
		ClientWithPollInterval(100 * time.Millisecond),
		ClientWithLogger(slog.New(slog.DiscardHandler)),
		ClientWithIdleAge(0),
	}, opts...)
	c, err := NewClient(p, opts...)
	if err != nil {
		panic(err)
	}
	return &MemClient{Client: c, Proc: p}
}

// SetReachable is the process's memory.Process.SetReachable.
func (m *MemClient) SetReachable(on bool) { m.Proc.SetReachable(on) }

// Reachable is the process's memory.Process.Reachable.
func (m *MemClient) Reachable() bool { return m.Proc.Reachable() }

// SetAnswering is the process's memory.Process.SetAnswering.
func (m *MemClient) SetAnswering(on bool) { m.Proc.SetAnswering(on) }

// Holder returns the claim at the head of key's queue, if any.
func (m *MemClient) Holder(key string) (clienthook.Claim, bool) {
	q, err := m.queueOf(context.Background(), key)
	if err != nil || len(q) == 0 {
		return clienthook.Claim{}, false
	}
	return q[0], true
}

// OnJudgedOver makes f run each time a session of m's keeper is judged
// over by its deadline timer or by a renewal reply that came too late,
// right after the keeper's lock is released, in the goroutine that judged
// it (lease.Keeper.SetJudgedOver).
func OnJudgedOver(m *Mutex, f func()) { m.client.keeper.SetJudgedOver(f) }

// RenewInterval is how often c renews its lease.
func (c *Client) RenewInterval() time.Duration { return c.cfg.lease.Interval }
