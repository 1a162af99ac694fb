package apisim

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// TestConcurrentReleasesPrune releases holds of one key from many
// goroutines of one Client for a minute of fake time, so that their
// ends prune the key's history at once. Run it with -race.
//
// Found by the simulation's -race run (TestPlanted/SemaphoreOverLimit,
// about one run in forty): Engine.prune (dsync/internal/queue/claim.go) reads
// the key's map of this process's claims (snapshot(key).mine, shared, not
// copied) without the engine's lock, while another prune's notePruned
// deletes from it and noteMine adds to it under the lock: a data race,
// and a process that the Go runtime may stop with "concurrent map read
// and map write". Engine.mineBetween now copies what prune needs under
// the lock; without that, -race reports the race here.
func TestConcurrentReleasesPrune(t *testing.T) {
	run := time.Minute // of fake time
	if !longtest.Enabled() {
		run = 15 * time.Second
	}
	synctest.Test(t, func(t *testing.T) {
		b, err := dsync.NewClient(memory.New(), dsync.ClientWithBucketSpan(4*time.Second), dsync.ClientWithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := dsync.NewSemaphore(b, "s", 8)
				if err != nil {
					t.Error(err)
					return
				}
				for end := time.Now().Add(run); time.Now().Before(end); {
					if err := s.Acquire(context.Background(), 1); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(10 * time.Millisecond)
					s.Release(1)
				}
			}()
		}
		wg.Wait()
	})
}
