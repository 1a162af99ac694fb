package dsync

import (
	"context"
	"errors"
	"github.com/go-dsync/dsync/internal/suspend"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/backoff"
)

// A waiter whose session was retired queues again in a new session after
// the pause's floor, not after the pause its earlier failures grew: on a
// slow store, a pause held at its cap added up to its cap to every
// retirement (issue 73, item 10). A failure in a live session still
// waits out the grown pause.
func TestRetiredSessionResetsThePause(t *testing.T) {
	cases := []struct {
		name    string
		live    bool
		atLeast time.Duration // the pause waited, at least
		below   time.Duration // and below
	}{
		{"session retired", false, backoff.Min / 2, backoff.Min},
		{"store error in a live session", true, backoff.Max / 2, backoff.Max},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &core{key: "k", cfg: config{
					logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
					clock:  SuspendClock(suspend.Process),
				}}
				a := &attempts{p: p, ctx: context.Background(), wait: true, backoff: backoff.Max}
				start := time.Now()
				if err := a.claimFailed(errors.New("renewal answered late"), tc.live); err != nil {
					t.Fatalf("claimFailed = %v, want nil (try again)", err)
				}
				if waited := time.Since(start); waited < tc.atLeast || waited >= tc.below {
					t.Fatalf("paused %v before the next attempt, want in [%v, %v)", waited, tc.atLeast, tc.below)
				}
			})
		})
	}
}
