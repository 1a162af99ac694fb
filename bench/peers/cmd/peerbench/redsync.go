package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	goredislib "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/go-dsync/dsync/bench/harness"
)

// redsyncDriver is redsync with one Redis server (its go-redis v9 pool).
type redsyncDriver struct{ addr string }

func (d *redsyncDriver) Name() string { return "redsync" }

func (d *redsyncDriver) Describe(ctx context.Context) (string, string) {
	lib := fmt.Sprintf("github.com/go-redsync/redsync/v4 %s (go-redis %s)",
		moduleVersion("github.com/go-redsync/redsync/v4"), moduleVersion("github.com/redis/go-redis/v9"))
	c := redis.NewClient(&redis.Options{Addr: d.addr})
	defer c.Close()
	server := "Redis (unknown version)"
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				server = "redis-server " + v + " (one node)"
			}
		}
	}
	return lib, server
}

func (d *redsyncDriver) Connect(ctx context.Context, m *harness.Meter, ns string) (harness.Conn, error) {
	c := redis.NewClient(&redis.Options{
		Addr: d.addr,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return m.Conn(conn), nil
		},
	})
	c.AddHook(hook{m})
	return &redsyncConn{c: c, rs: redsync.New(goredislib.NewPool(c)), ns: ns}, nil
}

// hook counts every command go-redis sends.
type hook struct{ m *harness.Meter }

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t := time.Now()
		err := next(ctx, cmd)
		h.m.Command(cmd.Name(), time.Since(t), err != nil && !errors.Is(err, redis.Nil))
		return err
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t := time.Now()
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.m.Command(cmd.Name(), time.Since(t), cmd.Err() != nil && !errors.Is(cmd.Err(), redis.Nil))
		}
		return err
	}
}

type redsyncConn struct {
	c  *redis.Client
	rs *redsync.Redsync
	ns string
}

func (c *redsyncConn) NewMutex(key string, ttl time.Duration) (harness.Locker, error) {
	// Lock blocks until held, as the other libraries' do: redsync's
	// default of 32 tries (about 5 s) would give up; its retry delay stays
	// the default, uniform in [50 ms, 250 ms).
	mu := c.rs.NewMutex(c.ns+":"+key, redsync.WithExpiry(ttl), redsync.WithTries(math.MaxInt32))
	return &redsyncMutex{mu: mu, ttl: ttl}, nil
}

func (c *redsyncConn) RenewCommands() []string { return []string{"evalsha", "eval"} }

func (c *redsyncConn) Close() error { return c.c.Close() }

// redsyncMutex renews its lease with Extend every TTL/3 while held:
// redsync has no renewal of its own.
type redsyncMutex struct {
	mu  *redsync.Mutex
	ttl time.Duration
	k   *keeper
}

func (m *redsyncMutex) Lock(ctx context.Context) error {
	if err := m.mu.LockContext(ctx); err != nil {
		return err
	}
	m.k = startKeeper(m.ttl, m.mu.ExtendContext)
	return nil
}

func (m *redsyncMutex) TryLock(ctx context.Context) (bool, error) {
	err := m.mu.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case err == nil:
		m.k = startKeeper(m.ttl, m.mu.ExtendContext)
		return true, nil
	case errors.Is(err, redsync.ErrFailed), errors.As(err, &taken):
		return false, nil
	}
	return false, err
}

func (m *redsyncMutex) Unlock(ctx context.Context) error {
	m.k.stop()
	m.k = nil
	ok, err := m.mu.UnlockContext(ctx)
	if err == nil && !ok {
		return errors.New("redsync: unlock found the lock taken")
	}
	return err
}

func (m *redsyncMutex) Lost() bool { return m.k.isLost() }

// Lacks says why redsync has no column in the family scenarios (it offers
// a Mutex only), and no status page or compaction in the scale scenario.
func (d *redsyncDriver) Lacks(scenario string) string {
	const has = "redsync has only a Mutex (Lock, TryLock, Extend, Valid, Unlock)"
	switch scenario {
	case harness.RWMutexScenario:
		return "no reader/writer lock: " + has
	case harness.SemaphoreScenario:
		return "no semaphore: " + has
	case harness.OnceScenario:
		return "no Once: " + has
	}
	return scaleLacks(scenario, redsyncStatus, redsyncCompaction)
}
