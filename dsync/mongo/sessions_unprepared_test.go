package dsyncmongo

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestSessionsWithoutPrepare: the sessions' writes that sample or judge
// by Prepare's clock do not dereference a store that has only
// PrepareRead's: RenewSession is refused (errNotPrepared) with nothing
// sent, and Close (which deletes long-expired sessions once this store
// made one) deletes none and returns. Both dereferenced the missing
// estimator (a nil pointer) before.
func TestSessionsWithoutPrepare(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	s, err := NewStore(mongotest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = s.Close()
		}
	})
	if err := s.Roles().Reads.PrepareRead(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RenewSession(ctx, "s", 0, time.Now().Add(time.Minute)); !errors.Is(err, errNotPrepared) {
		t.Errorf("RenewSession after PrepareRead alone: %v, want %v", err, errNotPrepared)
	}
	// driver.Store asks for Prepare before a write; a caller that skips
	// it must still be able to close the store.
	if err := s.InsertSession(ctx, driver.Session{ID: "s", ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	s.sessions.clean(ctx)
	closed = true
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
