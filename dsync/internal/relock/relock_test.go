package relock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// claims is a key's claims by epoch, as ReadOwner reads them.
type claims map[uint64]string

func env(start time.Time, c claims, window time.Duration, reads *[]uint64) Env {
	return Env{
		Mono:   func() time.Duration { return time.Since(start) },
		Window: window,
		ReadOwner: func(_ context.Context, epoch uint64) (string, bool, error) {
			*reads = append(*reads, epoch)
			o, ok := c[epoch]
			return o, ok, nil
		},
		AwaitClaim: func(ctx context.Context, _ uint64, d time.Duration) bool {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(d):
				return true
			}
		},
	}
}

// TestAfterPredecessorFindsItsClaim: the wait reads past other owners'
// claims to the predecessor's and stops there, at once.
func TestAfterPredecessorFindsItsClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var s State
		s.TookOver(5, "pred", "me", 0)
		took, ok := s.Last()
		if !ok {
			t.Fatal("no takeover recorded")
		}
		if _, again := s.Last(); again {
			t.Fatal("Last did not forget the takeover")
		}
		var reads []uint64
		AfterPredecessor(context.Background(), took, env(start, claims{6: "other", 7: "pred"}, time.Second, &reads))
		if len(reads) != 2 || reads[1] != 7 {
			t.Fatalf("read epochs %v, want [6 7]", reads)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("waited %v with the predecessor's claim there", waited)
		}
	})
}

// TestAfterPredecessorGivesUpAfterWindow: with no claim of the
// predecessor, the wait ends once the window since the takeover passed.
func TestAfterPredecessorGivesUpAfterWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		const window = 100 * time.Millisecond
		var s State
		s.TookOver(5, "pred", "me", 0)
		took, _ := s.Last()
		var reads []uint64
		AfterPredecessor(context.Background(), took, env(start, claims{}, window, &reads))
		if waited := time.Since(start); waited != window {
			t.Fatalf("waited %v, want the window %v", waited, window)
		}
		if len(reads) == 0 || len(reads) > maxRelockReads {
			t.Fatalf("%d reads, want 1 to %d", len(reads), maxRelockReads)
		}
	})
}

// TestTookOverFromItself: a release of the primitive's own claim, or none
// just below, is no takeover.
func TestTookOverFromItself(t *testing.T) {
	var s State
	s.TookOver(5, "pred", "me", 0)
	s.TookOver(6, "me", "me", 0)
	if _, ok := s.Last(); ok {
		t.Fatal("a takeover from its own claim was recorded")
	}
	s.TookOver(7, "", "me", 0)
	if _, ok := s.Last(); ok {
		t.Fatal("a takeover from no claim was recorded")
	}
}
