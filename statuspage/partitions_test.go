package statuspage_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/leader/operator"
	"github.com/go-dsync/dsync/statuspage"
)

// The shards of a leader.Partition are shown as a partition, in shard
// order, each owned with the token its function runs under, and not among
// the elections.
func TestJSONShowsPartitionShards(t *testing.T) {
	store := memory.New()
	ms := leadertest.NewMemoryMembers()
	p, err := leader.NewPartition(newClient(t, store.Process()), "jobs", 3, leader.WithMembers(ms), leader.WithHeartbeatInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var mu sync.Mutex
	tokens := map[int]uint64{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- p.Run(ctx, func(ctx context.Context, shard int) error {
			info, _ := leader.TermOf(ctx)
			mu.Lock()
			tokens[shard] = info.Token
			mu.Unlock()
			<-ctx.Done()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })

	f := &fixture{client: newClient(t, store.Process())}
	f.srv = httptest.NewServer(statuspage.New(statuspage.Config{Client: f.client, Members: ms}))
	t.Cleanup(f.srv.Close)
	s := f.until(t, "/status.json", func(s statuspage.Snapshot) bool {
		mu.Lock()
		running := len(tokens)
		mu.Unlock()
		if running != 3 || len(s.Partitions) != 1 || len(s.Partitions[0].Shards) != 3 {
			return false
		}
		for _, sh := range s.Partitions[0].Shards {
			if sh.Owner == nil {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if pt := s.Partitions[0]; pt.Name != "jobs" {
		t.Errorf("partition %q, want jobs", pt.Name)
	}
	for i, sh := range s.Partitions[0].Shards {
		if sh.Shard != i || sh.Election != "jobs#"+strconv.Itoa(i) || sh.Key != "dsync:election/jobs#"+strconv.Itoa(i) || sh.Owner.Term != tokens[i] || sh.Owner.PID == 0 || sh.Owner.ExpiresInMS <= 0 {
			t.Errorf("shard %d: %+v (owner %+v), want owned in the term its function runs in, %d", i, sh, sh.Owner, tokens[i])
		}
	}
	if len(s.Elections) != 0 {
		t.Errorf("elections %+v: the shards are listed as elections too", s.Elections)
	}
}

// TestJSONShowsDrainedMembers: a partition lists the members an operator
// drained (operator.Drain), with the member's host and pid where its status
// is seen and who drained it, when and why; an undrained member is not
// listed; app.js draws them.
func TestJSONShowsDrainedMembers(t *testing.T) {
	store := memory.New()
	ms := leadertest.NewMemoryMembers()
	p, err := leader.NewPartition(newClient(t, store.Process()), "jobs", 2, leader.WithMembers(ms), leader.WithHeartbeatInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	q, err := leader.NewPartition(newClient(t, store.Process()), "jobs", 2, leader.WithMembers(ms), leader.WithHeartbeatInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	for _, m := range []*leader.Partition{p, q} { // q, undrained, owns the shards
		go func() { done <- m.Run(ctx, func(ctx context.Context, shard int) error { <-ctx.Done(); return nil }) }()
	}
	t.Cleanup(func() { cancel(); <-done; <-done })
	for _, d := range []struct {
		member string
		drain  bool
	}{{p.ID(), true}, {"gone", true}, {"back", true}, {"back", false}} {
		if _, err := operator.Drain(ctx, ms, "jobs", d.member, d.drain, "ops@host", "why "+d.member); err != nil {
			t.Fatal(err)
		}
	}

	f := &fixture{client: newClient(t, store.Process())}
	f.srv = httptest.NewServer(statuspage.New(statuspage.Config{Client: f.client, Members: ms, Seen: time.Minute}))
	t.Cleanup(f.srv.Close)
	s := f.until(t, "/status.json", func(s statuspage.Snapshot) bool {
		return len(s.Partitions) == 1 && len(s.Partitions[0].Drained) == 2 && s.Partitions[0].Drained[0].PID+s.Partitions[0].Drained[1].PID != 0
	})
	byID := map[string]statuspage.DrainedMember{}
	for _, d := range s.Partitions[0].Drained {
		byID[d.ID] = d
	}
	if d, ok := byID[p.ID()]; !ok || d.PID == 0 || d.Host == "" || d.By != "ops@host" || d.Reason != "why "+p.ID() || d.At.IsZero() {
		t.Errorf("drained %+v; want the running member %s with its host and pid, drained by ops@host", s.Partitions[0].Drained, p.ID())
	}
	if d, ok := byID["gone"]; !ok || d.PID != 0 || d.Host != "" || d.Reason != "why gone" {
		t.Errorf("drained %+v; want gone, without a host or pid (no status seen)", s.Partitions[0].Drained)
	}
	if !strings.Contains(body(t, f.srv.URL+"/app.js"), "p.drained") {
		t.Error("app.js does not draw a partition's drained members")
	}
}
