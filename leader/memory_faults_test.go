package leader_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// A leader whose in-memory store becomes unreachable loses its term at
// its deadline, and member status fails meanwhile; nothing is logged
// unless a logger is given.
func TestMemoryBackendUnreachable(t *testing.T) {
	var logged lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	synctest.Test(t, func(t *testing.T) {
		b := leader.NewMemoryBackend()
		const ttl = time.Second
		e, err := leader.NewElection(b, "svc", leader.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		lctx, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		b.SetReachable(false)
		<-lctx.Done()
		if at := time.Since(start); at > ttl || !errors.Is(context.Cause(lctx), leader.ErrLeadershipLost) {
			t.Errorf("leadership ended %v after the store went away (TTL %v), cause %v; want ErrLeadershipLost within the TTL", at, ttl, context.Cause(lctx))
		}
		if _, err := b.Members(context.Background(), "svc", time.Minute); !errors.Is(err, dsync.ErrUnreachable) {
			t.Errorf("Members while unreachable = %v, want ErrUnreachable", err)
		}
		b.SetReachable(true)
		if _, err := e.Campaign(context.Background()); err != nil {
			t.Fatalf("Campaign once reachable again: %v", err)
		}
		if err := e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	if out := logged.String(); out != "" {
		t.Errorf("the memory backend logged, with no logger given:\n%s", out)
	}
}

// lockedBuffer is a log's destination that goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
