package dsync_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// refusedStore, while down, answers every call of a claim, its reads
// and a session's insert as MongoDB's driver does when no server accepts
// its connections: it keeps trying until the call's context ends, then
// fails with a server selection error that names the refusal.
type refusedStore struct {
	*memory.Store
	down atomic.Bool
}

func newRefusedStore() *refusedStore {
	s := &refusedStore{}
	s.Store = memory.New().Intercept(s.refused)
	return s
}

func (s *refusedStore) refused(ctx context.Context, c memory.Call, _ func() error) error {
	switch c.Op {
	case "Insert", "InsertOrdered", "Get", "GetRun", "InsertSession":
	default:
		return nil
	}
	if !s.down.Load() {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("server selection error: %w, current topology: { Type: Single, Servers: [{ Addr: 127.0.0.1:27017, Type: Unknown, Last error: dial tcp 127.0.0.1:27017: connect: connection refused }, ] }", ctx.Err())
}

// A failed try says its cause once. A store that does not answer (and
// says nothing more when the try timeout ends its call) gives "did not
// answer within 2s (ClientWithTryTimeout)", once, whether the process had a
// session (warm) or not (cold). A store whose driver names a refused
// connection when the bound ends its call gives that refusal, once,
// after the bound that stopped the try, and does not say that the store
// did not answer; one that refuses at once gives its refusal. Before, the first said "did not answer" twice (and "dsync:
// dsync:" cold), the second said it twice before the refusal.
func TestTryErrorSaysItsCauseOnce(t *testing.T) {
	const noAnswer = "the store did not answer within 2s (ClientWithTryTimeout)"
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("memory/warm=%v", warm), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testTryOnMemory(t, warm, noAnswer) })
		})
		t.Run(fmt.Sprintf("refused/warm=%v", warm), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testTryRefused(t, warm) })
		})
	}
}

func testTryOnMemory(t *testing.T, warm bool, noAnswer string) {
	a := dsync.NewMemClient()
	defer a.Close()
	m := newMutex(t, a.Client, "m")
	if warm {
		lockUnlock(m)
	}
	a.SetAnswering(false)
	err := m.TryLockContext(context.Background())
	a.SetAnswering(true)
	if err == nil || strings.Count(err.Error(), noAnswer) != 1 || strings.Contains(err.Error(), "dsync: dsync:") ||
		strings.Contains(err.Error(), "last store error") {
		t.Errorf("a try on a store that does not answer: %v; want %q said once", err, noAnswer)
	}

	a.SetReachable(false)
	err = m.TryLockContext(context.Background())
	a.SetReachable(true)
	if err == nil || strings.Count(err.Error(), "unreachable") != 1 || strings.Contains(err.Error(), "did not answer") {
		t.Errorf("a try on a store that refuses at once: %v; want the refusal, once", err)
	}
}

func testTryRefused(t *testing.T, warm bool) {
	s := newRefusedStore()
	m := newMutex(t, newClient(t, s), "m")
	if warm {
		lockUnlock(m)
	}
	s.down.Store(true)
	err := m.TryLockContext(context.Background())
	s.down.Store(false)
	t.Log(err)
	if err == nil || strings.Count(err.Error(), "connection refused") != 1 || strings.Contains(err.Error(), "did not answer") ||
		strings.Count(err.Error(), "ClientWithTryTimeout") != 1 {
		t.Errorf("a try while no server accepts connections: %v; want the refusal and the try timeout, once each, and no store that did not answer", err)
	}
}
