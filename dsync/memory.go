package dsync

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// MemoryBackend is a Client whose store is in process memory, for unit
// tests of code that uses dsync. It runs the same protocol as on MongoDB:
// sessions, a FIFO queue of claims per key whose epochs are the fencing
// tokens, end markers. Time is the time package's, so tests under
// testing/synctest run on fake time.
//
// NewMemoryBackend coordinates the goroutines of one process. To test
// several processes against one store, give each a MemoryBackend of its
// own on one memory.Store (NewMemoryBackendOn):
//
//	store := memory.New()
//	a := dsync.NewMemoryBackendOn(store)
//	b := dsync.NewMemoryBackendOn(store)
//
// SetReachable(false) cuts a backend off from its store, for tests of
// what code does when its lock is lost or the database is gone; on a
// shared store, the other backends go on, so a test can partition one
// process while another takes over. SetAnswering(false) makes the store
// hang instead, for tests of how long code waits.
//
// The zero value is not usable; call NewMemoryBackend.
type MemoryBackend struct {
	c     *Client
	store *faultyStore
}

// NewMemoryBackend returns a Client on a store of its own, in memory. It
// logs nothing unless opts give it a logger (ClientWithLogger): in tests,
// a failed renewal is something the test provoked (SetReachable), not news.
// It panics if an option is invalid, as a test's mistake.
func NewMemoryBackend(opts ...ClientOption) *MemoryBackend {
	return NewMemoryBackendOn(memory.New(), opts...)
}

// NewMemoryBackendOn returns a Client on store, which other
// MemoryBackends (or Clients) may share, as processes share a database:
// one per simulated process. Its faults (SetReachable, SetAnswering) are
// its own; the store and the other backends on it are not affected.
// Closing it leaves the store to the others. Otherwise it is
// NewMemoryBackend.
func NewMemoryBackendOn(store *memory.Store, opts ...ClientOption) *MemoryBackend {
	fs := &faultyStore{Store: store}
	opts = append([]ClientOption{ClientWithPollInterval(memoryPollInterval), ClientWithLogger(discardLogger)}, opts...)
	c, err := NewClient(fs, opts...)
	if err != nil {
		panic(err)
	}
	return &MemoryBackend{c: c, store: fs}
}

// discardLogger logs nothing.
var discardLogger = slog.New(slog.DiscardHandler)

// Client returns the backend's Client.
func (b *MemoryBackend) Client() *Client { return b.c }

// Close closes the backend's Client.
func (b *MemoryBackend) Close() error { return b.c.Close() }

// memoryPollInterval caps how long a waiter on the in-memory backend waits
// without news: a claim ends under its waiter's eyes (the same Client), so
// this only bounds the wait for a claim whose session expired.
const memoryPollInterval = 100 * time.Millisecond

// Holder returns the claim at the head of key's queue, if any: the one
// that holds, or is about to.
func (b *MemoryBackend) Holder(key string) (ClaimInfo, bool) {
	q, err := b.c.Queue(context.Background(), key)
	if err != nil || len(q) == 0 {
		return ClaimInfo{}, false
	}
	return q[0], true
}
