package keydir

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestRecorderIsBounded: a process that claims more distinct keys than
// the recorder remembers keeps at most maxRecorded of them, and at most
// maxRecorded waiting to be put; a key it dropped or forgot is put at its
// next claim.
func TestRecorderIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		start := time.Now()
		r := New(store.Roles().Directory, func() time.Duration { return time.Since(start) }, slog.New(slog.DiscardHandler))
		n := maxRecorded + 500
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%05d", i)
		}
		for round := range 2 {
			for _, k := range keys {
				r.Claimed(k)
				r.mu.Lock()
				pending := len(r.pending)
				r.mu.Unlock()
				if pending > maxRecorded {
					t.Fatalf("round %d: %d keys pending, want at most %d", round, pending, maxRecorded)
				}
			}
			synctest.Wait()
			r.mu.Lock()
			recorded := len(r.recorded)
			r.mu.Unlock()
			if recorded > maxRecorded {
				t.Errorf("round %d: %d keys remembered, want at most %d", round, recorded, maxRecorded)
			}
		}
		if got := len(store.Keys()); got != n {
			t.Errorf("directory has %d keys after every key was claimed twice, want all %d", got, n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.Close(ctx)
	})
}
