package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// An unlock whose context has already ended cannot send its release; the
// release is still sent, in the background, so that the same Client's
// next Lock of the key (whose session renews the lease of the unreleased
// claim) does not wait behind it while the process lives.
func TestUnlockOnAnEndedContextStillReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := dsync.NewMemClient()
		defer mem.Client.Close() // its resender too
		m := newMutex(t, mem.Client, "k")
		m.Lock()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = m.UnlockContext(ctx) // cut short: the release's fate is unknown
		lctx, lcancel := context.WithTimeout(context.Background(), 10*dsync.DefaultTTL)
		defer lcancel()
		start := time.Now()
		if err := m.LockContext(lctx); err != nil {
			t.Fatalf("relock after an unlock on an ended context: %v (after %v)", err, time.Since(start))
		}
		if took := time.Since(start); took > dsync.DefaultTTL {
			t.Errorf("relock took %v, more than a TTL: the release waited for the lease", took)
		}
		m.Unlock()
	})
}
