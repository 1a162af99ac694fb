package hint

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestAnnouncementReachesAProcessThatStartsAfterIt: a waiter announces
// itself while it knows no other process (the owner of the claim it waits
// for does not take hints yet); when the owner starts and says hello, the
// waiter sends it the announcement at once, not only when it makes it
// again itself after wake.LostWindow (bench/handoff-tails.md: the
// release then woke the waiter at its poll). One whose owner answered
// (a Held came from it), and one older than resendWithin, are not sent
// again.
func TestAnnouncementReachesAProcessThatStartsAfterIt(t *testing.T) {
	store := memory.New()
	// Announcements kept an hour here, not a second: the test does not
	// race the owner's start on a busy machine.
	w := followWith(t, store, nil, func(f *Feed) { f.resendWithin = time.Hour })
	ctx := context.Background()
	until := store.ServerTime().Latest.Add(time.Hour)
	announce := func(key string) {
		// Sent to nobody: no other process is known yet.
		if err := w.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: key, Epoch: 4, Until: until, Proc: "w"}); err != errNotSent {
			t.Fatalf("Publish with no process known = %v, want errNotSent", err)
		}
	}
	announce("k")
	announce("answered")
	announce("old")
	w.f.mu.Lock()
	w.f.owners[claimID{"answered", 4}] = waiter{until: until} // a Held came from its owner
	old := w.f.recent[claimID{"old", 4}]
	old.at -= time.Hour
	w.f.recent[claimID{"old", 4}] = old
	w.f.mu.Unlock()

	owner := follow(t, store, nil) // reads the waiter's record, says hello
	knows(t, w, owner)
	owner.rec.waitFor(t, func(e driver.Event) bool {
		return e.Kind == driver.Waiting && e.Key == "k" && e.Epoch == 4 && e.Proc == "w" && e.Until.Equal(until)
	})
	// A marker after them: hints between two processes arrive in order
	// on loopback, so once it is in, the others would have been too.
	if err := w.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: "marker", Epoch: 1, Until: until, Proc: "w"}); err != nil {
		t.Fatal(err)
	}
	owner.rec.waitFor(t, about("marker"))
	for _, key := range []string{"answered", "old"} {
		if n := owner.rec.count(about(key)); n != 0 {
			t.Errorf("announcement %q sent to the new process %d times; want none", key, n)
		}
	}
}
