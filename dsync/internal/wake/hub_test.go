package wake

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// The Client's defaults (dsync.DefaultPollInterval, DefaultSafetyPoll).
const (
	defaultPoll       = 250 * time.Millisecond
	defaultSafetyPoll = 15 * time.Second
)

// testEnv is a Client's Env over store, polling at poll, with its safety
// poll safety: no hints, and every session found gone.
func testEnv(store *memory.Store, poll, safety time.Duration) Env {
	start := time.Now()
	return Env{
		Mono: func() time.Duration { return time.Since(start) },
		Now:  store.ServerTime,
		SessionAlive: func(context.Context, string) (bool, time.Time, error) {
			return false, time.Time{}, nil
		},
		Logger: slog.New(slog.DiscardHandler),
		Poll:   poll, SafetyPoll: safety, TTL: 15 * time.Second,
	}
}

// following returns a Hub over store's feed, following it, with env.
func following(t *testing.T, store *memory.Store, env Env, proc string) *Hub {
	t.Helper()
	h := New(env, store.Roles().Feed, proc)
	h.Start()
	t.Cleanup(h.Close)
	return h
}

// publishes is a driver.Feed that keeps what it is given to publish.
type publishes struct {
	mu     sync.Mutex
	events []driver.Event
}

func (p *publishes) Follow(driver.FeedHandler) func() { return func() {} }
func (p *publishes) Replay() time.Duration            { return 0 }
func (p *publishes) Publish(_ context.Context, e driver.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
	return nil
}
func (p *publishes) count() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.events) }
