package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// countedRenewals counts the renewals and generation inserts that reach
// the store.
type countedRenewals struct {
	*memory.Store
	writes int
}

func (s *countedRenewals) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	s.writes++
	return s.Store.RenewSession(ctx, id, gen, expires)
}

func (s *countedRenewals) InsertSession(ctx context.Context, sess queue.Session) error {
	if sess.Gen > 0 {
		s.writes++
	}
	return s.Store.InsertSession(ctx, sess)
}

// TestRenewalCheckedAfterItsExpiry: RenewSession runs the renewal check
// it is given (WithRenewalCheck) once it has computed the expiry, and a
// check that fails (the owner's deadline passed meanwhile: a pause, or a
// wait for a renewal in flight) sends nothing and returns ErrRenewalLate;
// one that passes sends the renewal.
func TestRenewalCheckedAfterItsExpiry(t *testing.T) {
	ctx := context.Background()
	store := &countedRenewals{Store: memory.New()}
	clock := &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e, err := queue.New(store, clock, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := e.OpenSession(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checked := false
	late := queue.WithRenewalCheck(ctx, func() bool {
		// The expiry is computed by now: the clock moves past the
		// deadline only here, as a pause there would.
		checked = true
		clock.now += 2 * time.Second
		return false
	})
	if _, _, err := e.RenewSession(late, sess, time.Second); !errors.Is(err, queue.ErrRenewalLate) {
		t.Fatalf("RenewSession with a failing check = %v, want ErrRenewalLate", err)
	}
	if !checked || store.writes != 0 {
		t.Fatalf("checked %v, %d renewal writes sent; want the check run and nothing sent", checked, store.writes)
	}
	ok := queue.WithRenewalCheck(ctx, func() bool { return true })
	if found, _, err := e.RenewSession(ok, sess, time.Second); err != nil || !found || store.writes != 1 {
		t.Fatalf("RenewSession with a passing check = %v, %v, %d writes; want found, sent once", found, err, store.writes)
	}
}
