package wake

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestAnnouncementAfterTheEndIsAnswered: a waiter whose announcement
// reaches the owner only after the owner ended the claim is still woken by
// an Ended event, so it need not look again before the safety poll.
func TestAnnouncementAfterTheEndIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		owner := following(t, store, testEnv(store, defaultPoll, time.Hour), "owner")
		waiter := following(t, store, testEnv(store, defaultPoll, time.Hour), "waiter")
		k := ClaimID{"k", 1}
		owner.Claimed(k.Key, k.Epoch, "s")
		owner.Ended(context.Background(), k.Key, k.Epoch)
		synctest.Wait()
		// Too late: the claim has ended, and nobody had announced itself.
		woken, leave := waiter.waiters.enter(k, waiter.Mark())
		defer leave()
		if _, err := waiter.ours.announce(context.Background(), k, 0, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-woken:
		default:
			t.Fatal("no Ended event answered the late announcement")
		}
	})
}

// TestAnEarlierEndOfTheEpochDoesNotAnswerTheClaim: a claim withdrawn
// (an insert whose outcome was unknown) and made again at the same epoch
// by the same process is a claim that has not ended: an announcement for
// it is kept until its real end, which wakes the waiter, and is not
// answered at once by the end remembered from the withdrawal (the waiter
// would then learn of the real end only at its later looks).
func TestAnEarlierEndOfTheEpochDoesNotAnswerTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		owner := following(t, store, testEnv(store, defaultPoll, time.Hour), "owner")
		waiter := following(t, store, testEnv(store, defaultPoll, time.Hour), "waiter")
		ctx, k := context.Background(), ClaimID{"k", 1}
		owner.Claimed(k.Key, k.Epoch, "s")
		owner.Ended(ctx, k.Key, k.Epoch) // withdrawn
		owner.Claimed(k.Key, k.Epoch, "s")
		synctest.Wait()
		woken, leave := waiter.waiters.enter(k, waiter.Mark())
		defer leave()
		if _, err := waiter.ours.announce(ctx, k, 0, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-woken:
			t.Fatal("the waiter was woken while the claim it waits for is held")
		default:
		}
		owner.Ended(ctx, k.Key, k.Epoch)
		synctest.Wait()
		select {
		case <-woken:
		default:
			t.Fatal("the claim's end woke nobody: its announcement was dropped")
		}
	})
}

// TestAnnouncingAgainKeepsTheAge: an announcement made again while the
// last one holds keeps the age of the first, so the looks at doubling
// intervals that follow a first announcement (against an end that comes
// soon and an event that is lost) are not made again each time; one made
// after the last lapsed starts afresh.
func TestAnnouncingAgainKeepsTheAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const safety = 100 * time.Millisecond
		store := memory.New()
		h := following(t, store, testEnv(store, defaultPoll, safety), "me")
		hold := h.holdFor() // how long announcements hold
		ctx := context.Background()
		k := ClaimID{"k", 1}
		if age, err := h.ours.announce(ctx, k, 0, 1); err != nil || age != 0 {
			t.Fatalf("first announce = %v, %v; want a new announcement", age, err)
		}
		announced := func() announcement {
			a, _ := h.ours.get(k)
			return a
		}
		first := announced()
		// Past the point where less than a safety poll interval is left.
		time.Sleep(hold - safety/2)
		age, err := h.ours.announce(ctx, k, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		again := announced()
		if !again.until.After(first.until) {
			t.Fatalf("announcement not made again: until %v, was %v", again.until, first.until)
		}
		if want := hold - safety/2; age != want {
			t.Errorf("age after announcing again = %v, want %v (the first announcement's)", age, want)
		}
		// Let it lapse: the next announcement is a first one again.
		time.Sleep(hold + time.Millisecond)
		if age, err := h.ours.announce(ctx, k, 0, 1); err != nil || age != 0 {
			t.Errorf("announce after the last lapsed = %v, %v; want a new announcement (age 0)", age, err)
		}
	})
}

// TestDirectWaitersAnnounceWhileTheStreamIsDown: with direct hints
// (ClientWithHints), a waiter announces itself while the store's stream
// is not live too (a hint may wake it before its poll), once; and again
// once the stream is live, since the store's stream never carried that
// announcement. Without hints, it announces only while the stream is
// live.
func TestDirectWaitersAnnounceWhileTheStreamIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, direct := range []bool{true, false} {
			env := testEnv(memory.New(), defaultPoll, defaultSafetyPoll)
			env.Direct = direct
			feed := &publishes{}
			h := New(env, feed, "me")
			ctx, k := context.Background(), ClaimID{"k", 1}
			if d := h.pollFor(ctx, k, 0, 1); d != defaultPoll {
				t.Errorf("direct %v: a waiter with the stream down looks again in %v, want the poll interval", direct, d)
			}
			h.pollFor(ctx, k, 0, 1)
			want := 0
			if direct {
				want = 1
			}
			if n := feed.count(); n != want {
				t.Errorf("direct %v: %d announcements with the stream down, want %d", direct, n, want)
			}
			h.Live(1)
			h.pollFor(ctx, k, 0, 1)
			h.pollFor(ctx, k, 0, 1)
			if n := feed.count(); n != want+1 {
				t.Errorf("direct %v: %d announcements once the stream is live, want %d", direct, n, want+1)
			}
		}
	})
}

// TestUnansweredAnnouncementIsMadeAgain: with direct hints, an
// announcement that no Held hint answered is made again at the waiter's
// first look LostWindow or more after it was sent, and not before (a
// process learnt of since then hears of the waiter: dsync/hint's
// newpeer.go leaves announcements older than that to this).
func TestUnansweredAnnouncementIsMadeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := testEnv(memory.New(), defaultPoll, defaultSafetyPoll)
		env.Direct = true
		feed := &publishes{}
		h := New(env, feed, "me")
		h.Live(1)
		ctx, k := context.Background(), ClaimID{"k", 1}
		if _, err := h.ours.announce(ctx, k, 0, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(LostWindow - time.Millisecond)
		if _, err := h.ours.announce(ctx, k, 0, 1); err != nil {
			t.Fatal(err)
		}
		if n := feed.count(); n != 1 {
			t.Fatalf("%d announcements within LostWindow, want 1", n)
		}
		time.Sleep(time.Millisecond)
		if _, err := h.ours.announce(ctx, k, 0, 1); err != nil {
			t.Fatal(err)
		}
		if n := feed.count(); n != 2 {
			t.Errorf("%d announcements once LostWindow passed unanswered, want 2", n)
		}
	})
}
