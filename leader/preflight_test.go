package leader_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// preflightMembers is a member store whose Preflight fails (err) for the
// first failures calls, then answers refuse.
type preflightMembers struct {
	leader.MemberStore
	failures int32
	err      error
	refuse   error
	calls    atomic.Int32
}

func (m *preflightMembers) Preflight(ctx context.Context, election string) error {
	if m.calls.Add(1) <= m.failures {
		return m.err
	}
	return m.refuse
}

// TestCampaignRetriesAPreflightTheStoreFailed: a store that fails to
// answer a preflight does not end the campaign (the soak saw a candidate
// exit on one timeout under load); a refusal does, at once; and a
// campaign whose context ends while the store fails returns the cause.
func TestCampaignRetriesAPreflightTheStoreFailed(t *testing.T) {
	errStore := errors.New("store timed out")
	t.Run("transient", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newProc(t)
			p.members = &preflightMembers{MemberStore: p.members, failures: 5, err: errStore}
			e := newElection(t, p)
			defer e.Close()
			lctx, err := e.Campaign(context.Background())
			if err != nil {
				t.Fatalf("Campaign after five failed preflights: %v", err)
			}
			if n := p.members.(*preflightMembers).calls.Load(); n != 6 {
				t.Errorf("%d preflights, want 6", n)
			}
			if lctx.Err() != nil {
				t.Error("leadership context already done")
			}
		})
	})
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newProc(t)
			refusal := fmt.Errorf("an older release campaigns: %w", leader.ErrRefused)
			p.members = &preflightMembers{MemberStore: p.members, failures: 2, err: errStore, refuse: refusal}
			e := newElection(t, p)
			defer e.Close()
			if _, err := e.Campaign(context.Background()); !errors.Is(err, leader.ErrRefused) {
				t.Fatalf("Campaign = %v, want the refusal", err)
			}
			if n := p.members.(*preflightMembers).calls.Load(); n != 3 {
				t.Errorf("%d preflights, want 3", n)
			}
		})
	})
	t.Run("context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := newProc(t)
			p.members = &preflightMembers{MemberStore: p.members, failures: 1 << 30, err: errStore}
			e := newElection(t, p)
			defer e.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := e.Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Campaign = %v, want the context's cause", err)
			}
		})
	})
}
