package dsync

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/backoff"
	"github.com/go-dsync/dsync/internal/suspend"
)

// A waiter whose session was retired after a renewal of it was confirmed
// queues again after the pause's floor, not after the pause its earlier
// failures grew: on a slow store, a pause held at its cap added up to its
// cap to every retirement (issue 73, item 10). A session never renewed, as
// when every reply comes late, keeps the grown pause
// (TestLateRepliesBackOff shows that end to end).
func TestRetiredSessionResetsThePause(t *testing.T) {
	cases := []struct {
		name    string
		renewed bool          // a renewal of the retired session was confirmed
		atLeast time.Duration // the pause waited, at least
		below   time.Duration // and below
	}{
		{"renewed", true, backoff.Min / 2, backoff.Min},
		{"never renewed", false, backoff.Max / 2, backoff.Max},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &core{key: "k", cfg: config{
					logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
					clock:  SuspendClock(suspend.Process),
				}}
				a := &attempts{p: p, ctx: context.Background(), wait: true, backoff: backoff.Max}
				a.retired(tc.renewed)
				start := time.Now()
				if err := a.claimFailed(errors.New("session retired"), false); err != nil {
					t.Fatalf("claimFailed = %v, want nil (try again)", err)
				}
				if waited := time.Since(start); waited < tc.atLeast || waited >= tc.below {
					t.Fatalf("paused %v before the next attempt, want in [%v, %v)", waited, tc.atLeast, tc.below)
				}
			})
		})
	}
}
