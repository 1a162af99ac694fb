package statuspage_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/statuspage"
)

// newClientOn returns a Client over store, closed at the test's end,
// polling every 100ms and compacting nothing, so that what the reads find
// is what the test left there.
func newClientOn(t *testing.T, store driver.Store, opts ...dsync.ClientOption) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(store, append([]dsync.ClientOption{dsync.ClientWithPollInterval(100 * time.Millisecond), dsync.ClientWithIdleAge(0), dsync.ClientWithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newMutex returns a Mutex on key (its Client logs nothing).
func newMutex(t *testing.T, c *dsync.Client, key string) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// listAll lists every key opts selects, failing the test on an error.
func listAll(t *testing.T, c *dsync.Client, opts statuspage.ListOptions) []statuspage.KeyState {
	t.Helper()
	var all []statuspage.KeyState
	for ks, err := range statuspage.NewReader(c).List(context.Background(), opts) {
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		all = append(all, ks)
	}
	return all
}
