package dsync

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/keydir"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/suspend"
)

// SuspendClock returns SystemClock with the machine's suspended time
// counted by c instead of suspend.Process: a test's suspend.Fake.
func SuspendClock(c *suspend.Counter) Clock { return systemClock{c} }

// How a failed put of the directory of keys is tried again.
const (
	PutRetries = keydir.PutRetries
	PutPause   = keydir.PutPause
)

// ListAhead is how many keys' queues List reads at once, at most.
const ListAhead = listAhead

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
