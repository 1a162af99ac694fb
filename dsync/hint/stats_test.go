package hint

import (
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// TestWokeCountsHintsThatCameFirst: Woke counts an end a hint brought of
// a claim this process announced it waits for, once, and not one the
// store's feed brought first, nor one of a claim it never announced.
func TestWokeCountsHintsThatCameFirst(t *testing.T) {
	var c counters
	waiting := func(epoch uint64) driver.Event { return driver.Event{Kind: driver.Waiting, Key: "k", Epoch: epoch} }
	ended := func(epoch uint64) driver.Event { return driver.Event{Kind: driver.Ended, Key: "k", Epoch: epoch} }

	c.announced(waiting(1))
	c.endArrived(ended(1), false) // the store's feed first
	c.endArrived(ended(1), true)  // then the hint
	c.endArrived(ended(2), true)  // never announced
	if n := c.woke.Load(); n != 0 {
		t.Fatalf("woke %d, want 0", n)
	}
	c.announced(waiting(3))
	c.announced(ended(4)) // not an announcement
	c.endArrived(ended(3), true)
	c.endArrived(ended(3), true) // a duplicate
	c.endArrived(ended(4), true)
	if n := c.woke.Load(); n != 1 {
		t.Fatalf("woke %d, want 1", n)
	}
}
