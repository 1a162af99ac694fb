//go:build unix

package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// aheadUntilPrepared is a memory store as dsyncmongo's is behind a mongos
// whose clock is ahead of the shard's: its clock for reads
// (its driver.Roles.Reads) is the router's, ahead, until Prepare; from then
// on it is ServerTime's, as the contract says.
type aheadUntilPrepared struct {
	*memory.Store
	ahead    time.Duration
	prepared atomic.Bool
}

func (s *aheadUntilPrepared) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Reads = s
	return r
}
func (s *aheadUntilPrepared) PrepareRead(ctx context.Context) error { return s.Store.Prepare(ctx) }
func (s *aheadUntilPrepared) Prepare(ctx context.Context) error {
	if err := s.Store.Prepare(ctx); err != nil {
		return err
	}
	s.prepared.Store(true)
	return nil
}
func (s *aheadUntilPrepared) ReadServerTime() driver.Interval {
	iv := s.Store.ServerTime()
	if s.prepared.Load() {
		return iv
	}
	return driver.Interval{Earliest: iv.Earliest.Add(s.ahead), Latest: iv.Latest.Add(s.ahead)}
}

// TestRevokeKeyPicksByTheWriteClock: revoke --key picks the session to
// revoke by the clock that orders the writes. With a read clock a minute
// ahead, the holder (TTL 10s) looks expired to a read and its waiter (TTL
// 5m) holding; revoke picked the waiter's session, because it read the
// queue before it prepared the store for writing.
func TestRevokeKeyPicksByTheWriteClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		quiet := slog.New(slog.DiscardHandler)
		client := func(store driver.Store, ttl time.Duration) *dsync.Client {
			c, err := dsync.NewClient(store, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		mutex := func(c *dsync.Client) *dsync.Mutex {
			m, err := dsync.NewMutex(c, "k")
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		holder := client(mem, 10*time.Second)
		hm := mutex(holder)
		hm.Lock()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		waited := make(chan error, 1)
		wm := mutex(client(mem, 5*time.Minute))
		go func() { waited <- wm.LockContext(wctx) }()
		synctest.Wait() // the waiter queued

		q, err := statuspage.NewReader(client(mem, time.Minute)).Queue(ctx, "k")
		if err != nil || len(q) != 2 || !q[0].Holds {
			t.Fatalf("Queue(k) = %+v, %v; want a holder and a waiter", q, err)
		}
		store := &aheadUntilPrepared{Store: mem, ahead: time.Minute}
		got, err := keyHolder(ctx, client(store, time.Minute), store, "k")
		if err != nil || got != q[0].Session {
			t.Errorf("revoke --key k picks %q, %v; want the holder's session %q (the waiter's is %q)", got, err, q[0].Session, q[1].Session)
		}
		cancel()
		<-waited
		hm.Unlock()
	})
}
