package dsync

import (
	"context"
	"iter"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// callCounter is a store that counts every request a process sends it,
// by method. It forwards the optional interfaces the Client uses
// (RevokeStore, RunReader), so that wrapping it changes nothing else.
type callCounter struct {
	*memory.Process
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = make(map[string]int)
	}
	c.calls[name]++
}

// snapshot returns the counts so far.
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

func (c *callCounter) Insert(ctx context.Context, d driver.Doc) error {
	c.count("Insert")
	return c.Process.Insert(ctx, d)
}

func (c *callCounter) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	c.count("InsertOrdered")
	return c.Process.InsertOrdered(ctx, docs)
}

func (c *callCounter) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	c.count("InsertEach")
	return c.Process.InsertEach(ctx, docs)
}

func (c *callCounter) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	c.count("Get")
	return c.Process.Get(ctx, id)
}

func (c *callCounter) Delete(ctx context.Context, ids []string) error {
	c.count("Delete")
	return c.Process.Delete(ctx, ids)
}

func (c *callCounter) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	c.count("RecentKeys")
	return c.Process.RecentKeys(ctx, from)
}

func (c *callCounter) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	c.count("Compact")
	return c.Process.Compact(ctx, sentBefore, keep)
}

func (c *callCounter) DropGates(ctx context.Context, below int64, sentBefore time.Time) error {
	c.count("DropGates")
	return c.Process.DropGates(ctx, below, sentBefore)
}

func (c *callCounter) PutKeys(ctx context.Context, keys []string) error {
	c.count("PutKeys")
	return c.Process.PutKeys(ctx, keys)
}

func (c *callCounter) HasKey(ctx context.Context, key string) (bool, error) {
	c.count("HasKey")
	return c.Process.HasKey(ctx, key)
}

func (c *callCounter) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	c.count("ListKeys")
	return c.Process.ListKeys(ctx, q)
}

func (c *callCounter) InsertSession(ctx context.Context, s driver.Session) error {
	c.count("InsertSession")
	return c.Process.InsertSession(ctx, s)
}

func (c *callCounter) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	c.count("RenewSession")
	return c.Process.RenewSession(ctx, id, gen, expires)
}

func (c *callCounter) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	c.count("GetSession")
	return c.Process.GetSession(ctx, id)
}

func (c *callCounter) GetRun(ctx context.Context, key string, from, to uint64) ([]driver.Doc, error) {
	c.count("GetRun")
	return c.Process.GetRun(ctx, key, from, to)
}

func (c *callCounter) Revoke(ctx context.Context, r driver.Revocation) error {
	c.count("Revoke")
	return c.Process.Revoke(ctx, r)
}

func (c *callCounter) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	c.count("Revoked")
	return c.Process.Revoked(ctx, session)
}

func (c *callCounter) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	c.count("Revocations")
	return c.Process.Revocations(ctx)
}

var (
	_ driver.RevokeStore = (*callCounter)(nil)
	_ driver.RunReader   = (*callCounter)(nil)
)

// countingCalls makes the Client send its requests through cc.
func countingCalls(cc *callCounter) ClientOption {
	return func(c *clientConfig) error {
		c.wrapStore = func(s driver.Store) driver.Store { cc.Process = s.(*memory.Process); return cc }
		return nil
	}
}

// idleWaiterCalls counts, by kind, what a waiter in a process that hints
// reach sends the store over window, after waiting a minute behind a
// holder of another process that keeps its hold (both at the default
// TTL of 15 s), and returns the counts.
func idleWaiterCalls(t *testing.T, window time.Duration) map[string]int {
	t.Helper()
	net, cc := &hintNet{}, &callCounter{}
	store := memory.New()
	a := NewMemClientOn(store, net.member())
	b := NewMemClientOn(store, net.member(), countingCalls(cc))
	t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
	owner, locked := queueBehind(t, a, b, time.Minute)
	before := cc.snapshot()
	time.Sleep(window)
	synctest.Wait()
	after := cc.snapshot()
	owner.Unlock()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	d := make(map[string]int)
	for k, n := range after {
		if n -= before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// TestIdleWaiterCost measures, by kind, what an idle waiter sends the
// store while hints reach it and its claim's owner keeps sending Held
// hints: over 10 minutes at the default TTL of 15 s, its renewals (one
// per 5 s), its revoke checks, and nothing else. The figures the
// documentation states (docs/operations.md, "Hints first" and the revoke
// section).
func TestIdleWaiterCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = 10 * time.Minute
		d := idleWaiterCalls(t, window)
		var total int
		for _, k := range slices.Sorted(maps.Keys(d)) {
			total += d[k]
			t.Logf("%-14s %4d  %.3f/s", k, d[k], float64(d[k])/window.Seconds())
		}
		t.Logf("%-14s %4d  %.3f/s", "all", total, float64(total)/window.Seconds())
	})
}
