package leader_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// stalledMembers is a member store that, once hung, answers no call
// until its context ends or the store is let go.
type stalledMembers struct {
	leader.MemberStore
	mu      sync.Mutex
	hung    bool
	letGo   chan struct{}
	letOnce sync.Once
}

func newStalledMembers(ms leader.MemberStore) *stalledMembers {
	return &stalledMembers{MemberStore: ms, letGo: make(chan struct{})}
}

func (h *stalledMembers) hang() {
	h.mu.Lock()
	h.hung = true
	h.mu.Unlock()
}

// answer lets every call, waiting or to come, through.
func (h *stalledMembers) answer() { h.letOnce.Do(func() { close(h.letGo) }) }

func (h *stalledMembers) wait(ctx context.Context) error {
	h.mu.Lock()
	hung := h.hung
	h.mu.Unlock()
	if !hung {
		return nil
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-h.letGo:
		return nil
	}
}

func (h *stalledMembers) PutMember(ctx context.Context, election string, m leader.Member) error {
	if err := h.wait(ctx); err != nil {
		return err
	}
	return h.MemberStore.PutMember(ctx, election, m)
}

func (h *stalledMembers) Member(ctx context.Context, election, id string) (leader.Member, bool, error) {
	if err := h.wait(ctx); err != nil {
		return leader.Member{}, false, err
	}
	return h.MemberStore.Member(ctx, election, id)
}

func (h *stalledMembers) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.MemberStore.Members(ctx, election, maxAge)
}

func (h *stalledMembers) DeleteMember(ctx context.Context, election, id string) error {
	if err := h.wait(ctx); err != nil {
		return err
	}
	return h.MemberStore.DeleteMember(ctx, election, id)
}

// Close returns while the stores hang (the lock store and the member
// store stop answering): each release is bounded by the TTL, and the
// removal of the member's status then by the release timeout.
func TestPartitionCloseWhileTheStoreHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		pr := w.process(t)
		ms := newStalledMembers(w.members)
		defer ms.answer() // so that nothing is left waiting if the test fails
		pr.members = ms
		l := newLedger(t)
		a := startRunner(t, pr, 4, l.fn("a"))
		l.waitBalanced(t, 4, map[string]int{"a": 4}, ttl)
		pr.store.SetAnswering(false)
		defer pr.store.SetAnswering(true)
		ms.hang()
		start := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- a.p.Close() }()
		limit := ttl + min(dsync.DefaultReleaseTimeout, ttl) + time.Second
		select {
		case <-closed:
			t.Logf("Close returned %v after the stores hung", time.Since(start))
		case <-time.After(limit):
			t.Fatalf("Close did not return within %v while the stores hung", limit)
		}
	})
}
