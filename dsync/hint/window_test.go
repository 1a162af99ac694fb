package hint

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A sender's window of seqs (window.see) against a model of what it
// promises: each seq is taken once, and none windowLen or more below the
// highest seen.

// modelWindow is the window as a set: every seq seen, and the highest.
type modelWindow struct {
	top  uint64
	seen map[uint64]bool
}

func (r *modelWindow) see(seq uint64) bool {
	if seq > r.top {
		r.top = seq
	} else if r.top-seq >= windowLen {
		return false
	}
	if r.seen[seq] {
		return false
	}
	r.seen[seq] = true
	return true
}

// TestGuardWindowModel: over random runs of jumps up (by up to 3,000,
// past the window and within it), steps of one, duplicates and seqs
// that come late (up to 1,100 below the latest, across the window's
// edge), some near 2^64, the window takes exactly what the model takes.
func TestGuardWindowModel(t *testing.T) {
	for run := range 300 {
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		w, m := &window{}, &modelWindow{seen: map[uint64]bool{}}
		cur := uint64(1)
		if run%3 == 0 {
			cur = ^uint64(0) - 5_000_000
		}
		for i := range 20000 {
			var seq uint64
			switch rng.IntN(6) {
			case 0:
				cur += uint64(rng.IntN(3000))
				seq = cur
			case 1:
				cur++
				seq = cur
			default:
				seq = cur - uint64(rng.IntN(1100))
			}
			if got, want := w.see(seq, time.Unix(0, 0)), m.see(seq); got != want {
				t.Fatalf("run %d step %d: seq %d (top %d): window %v, model %v", run, i, seq, m.top, got, want)
			}
		}
	}
}

// TestGuardWindowCarry: a seq seen, whose bit a shift carries from one
// 64-bit word of the window to the next, is still refused played again.
func TestGuardWindowCarry(t *testing.T) {
	w := &window{}
	now := time.Unix(0, 0)
	for seq := uint64(1); seq <= 64; seq++ {
		if !w.see(seq, now) {
			t.Fatalf("seq %d refused", seq)
		}
	}
	if !w.see(66, now) { // seq 1's bit moves from bit 63 of word 0 to bit 1 of word 1
		t.Fatal("seq 66 refused")
	}
	if w.see(1, now) {
		t.Error("seq 1, seen, taken again after a shift carried its bit across a word")
	}
}
