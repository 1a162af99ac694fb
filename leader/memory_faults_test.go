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
	"github.com/go-dsync/dsync/dsync/driver/memory"
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

// Two processes on one memory store, each with a backend of its own
// (dsync.NewMemoryBackendOn, shared member status through WithLocks):
// the leader is partitioned from the store, its term ends at its
// deadline, and the other process is elected after that, with a higher
// term; the partitioned process's member status fails, the other's
// does not.
func TestPartitionedLeaderAndATakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		members := leader.NewMemoryBackend()
		da, db := dsync.NewMemoryBackendOn(store), dsync.NewMemoryBackendOn(store)
		defer da.Close()
		defer db.Close()
		a, b := members.WithLocks(da), members.WithLocks(db)
		const ttl = 2 * time.Second
		ea, err := leader.NewElection(a, "svc", leader.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer ea.Close()
		eb, err := leader.NewElection(b, "svc", leader.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer eb.Close()
		ctx := context.Background()
		actx, err := ea.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.SetReachable(false)
		bctx, err := eb.Campaign(ctx)
		if err != nil {
			t.Fatalf("the other process's Campaign: %v", err)
		}
		select {
		case <-actx.Done():
		default:
			t.Fatal("the other process was elected while the partitioned leader's term was live")
		}
		if !errors.Is(context.Cause(actx), leader.ErrLeadershipLost) {
			t.Errorf("the partitioned leader's term ended with %v, want ErrLeadershipLost", context.Cause(actx))
		}
		ta, _ := leader.TermOf(actx)
		tb, _ := leader.TermOf(bctx)
		if tb.Token <= ta.Token {
			t.Errorf("the new leader's term %d is not above the partitioned one's %d", tb.Token, ta.Token)
		}
		if _, err := a.Members(ctx, "svc", time.Minute); !errors.Is(err, dsync.ErrUnreachable) {
			t.Errorf("Members from the partitioned process = %v, want ErrUnreachable", err)
		}
		if _, err := b.Members(ctx, "svc", time.Minute); err != nil {
			t.Errorf("Members from the other process: %v", err)
		}
		a.SetReachable(true)
		if err := eb.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
