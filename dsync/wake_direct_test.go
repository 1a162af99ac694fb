package dsync

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

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

// TestDirectWaitersAnnounceWhileTheStreamIsDown: with direct hints
// (ClientWithHints), a waiter announces itself while the store's stream
// is not live too (a hint may wake it before its poll), once; and again
// once the stream is live, since the store's stream never carried that
// announcement. Without hints, it announces only while the stream is
// live.
func TestDirectWaitersAnnounceWhileTheStreamIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, direct := range []bool{true, false} {
			store, start := memory.New(), time.Now()
			feed := &publishes{}
			w := newWakeups(wakeEnv{
				mono: func() time.Duration { return time.Since(start) }, now: store.ServerTime,
				logger: slog.New(slog.DiscardHandler), poll: DefaultPollInterval, safetyPoll: DefaultSafetyPoll,
				direct: direct,
			}, feed, "me")
			ctx, k := context.Background(), waitKey{"k", 1}
			if d := w.pollFor(ctx, k, 0, 1); d != DefaultPollInterval {
				t.Errorf("direct %v: a waiter with the stream down looks again in %v, want the poll interval", direct, d)
			}
			w.pollFor(ctx, k, 0, 1)
			want := 0
			if direct {
				want = 1
			}
			if n := feed.count(); n != want {
				t.Errorf("direct %v: %d announcements with the stream down, want %d", direct, n, want)
			}
			w.Live(1)
			w.pollFor(ctx, k, 0, 1)
			w.pollFor(ctx, k, 0, 1)
			if n := feed.count(); n != want+1 {
				t.Errorf("direct %v: %d announcements once the stream is live, want %d", direct, n, want+1)
			}
		}
	})
}
