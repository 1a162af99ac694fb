package dsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/internal/queue"
)

// TestCapHeedsAKeyWithNoCoverage: a session holding two keys, one of
// which this process no longer knows the coverage of (its knowledge was
// dropped: coverLocked's 0), is capped at once: no renewal may extend its
// deadline. capLocked took a 0 for "no key seen yet", so when the key of
// unknown coverage came first in the map's order, the other key's
// coverage replaced it and renewals extended the lease past anything the
// first key's segment was known to cover.
func TestCapHeedsAKeyWithNoCoverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewMemClient(WithTTL(2 * time.Second))
		defer c.Close()
		ctx := context.Background()
		m, err := NewMutex(c.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		k := c.keeper
		k.mu.Lock()
		var s *session
		for h := range k.holds {
			s = h.sess
		}
		if s == nil {
			k.mu.Unlock()
			t.Fatal("the lock's hold is not in the keeper")
		}
		if k.coverLocked("k") <= s.lease.Deadline() {
			k.mu.Unlock()
			t.Fatal("the held key's coverage does not reach past the lease's deadline: the test shows nothing")
		}
		unknown := &hold{claim: queue.Ref{Key: "knowledge-dropped"}, sess: s, lost: make(chan struct{})}
		k.holds[unknown] = struct{}{}
		// Map order decides which hold capLocked sees first: try enough
		// times that both orders come.
		for i := range 64 {
			k.capLocked(s)
			d := s.lease.Deadline()
			at := d - time.Millisecond
			if ev := s.lease.Confirm(at, at); ev != queue.LeaseKept {
				delete(k.holds, unknown)
				k.mu.Unlock()
				t.Fatalf("try %d: a renewal of a session holding a key of unknown coverage moved its deadline from %v to %v (lease event %d), want it kept", i, d, s.lease.Deadline(), ev)
			}
		}
		delete(k.holds, unknown)
		k.mu.Unlock()
		if err := m.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
