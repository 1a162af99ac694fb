package driver_test

import (
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// TestWaitAndDeadlockIDs: a note's and a deadlock record's IDs are as
// documented, and two of them share an ID only if they share set and
// number, even when a set's name ends in ":" and digits.
func TestWaitAndDeadlockIDs(t *testing.T) {
	if got := driver.WaitID("cv1", 12); got != "w:cv1:12" {
		t.Errorf(`WaitID("cv1", 12) = %q; want "w:cv1:12"`, got)
	}
	if got := driver.DeadlockID("cv1", 12); got != "d:cv1:12" {
		t.Errorf(`DeadlockID("cv1", 12) = %q; want "d:cv1:12"`, got)
	}
	type note struct {
		set string
		n   uint64
	}
	seen := make(map[string]note)
	for _, set := range []string{"a", "a:1", "a:12", "a1", "", ":"} {
		for _, n := range []uint64{1, 2, 12, 112} {
			for _, id := range []string{driver.WaitID(set, n), driver.DeadlockID(set, n)} {
				if prev, ok := seen[id]; ok {
					t.Errorf("ID %q of (%q, %d) is also that of (%q, %d)", id, set, n, prev.set, prev.n)
				}
				seen[id] = note{set, n}
			}
		}
	}
}
