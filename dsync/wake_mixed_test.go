package dsync

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/wake"
)

// mixedHandoff starts an owner holding "k" in a process that hints reach
// (over net: it reads no store stream, and publishes through hints
// only), and a waiter without hints, whose store stream is live, in Lock
// behind it, on store. It returns once the waiter has waited for waited;
// the waiter's Lock returns on locked.
func mixedHandoff(t *testing.T, store *memory.Store, rc *readCounter, waited time.Duration) (owner *Mutex, locked chan error) {
	t.Helper()
	a := NewMemClientOn(store, (&hintNet{}).member())
	b := NewMemClientOn(store, countingReads(rc))
	t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
	return queueBehind(t, a, b, waited) // it queues, announces itself, looks
}

// recordPeer records a process that takes hints in store, as the hint
// transport of the owner in mixedHandoff would.
func recordPeer(t *testing.T, store *memory.Store) {
	t.Helper()
	p := driver.Peer{ID: "owner", Addr: "127.0.0.1:9", ExpiresAt: store.ServerTime().Latest.Add(time.Hour)}
	if err := store.Roles().Peers.PutPeer(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// TestWaiterWithoutHintsBehindAHintedOwner: a waiter without hints behind
// the claim of a process that hints reach (which does not read the store's
// stream, so never hears the waiter's announcement and sends no Ended
// event for it) holds within the poll interval of the owner's Unlock,
// not at its safety poll, when processes that take hints are recorded in
// the store. TestElection's worker without hints took 13-15 s to follow
// each release by a worker with hints.
func TestWaiterWithoutHintsBehindAHintedOwner(t *testing.T) {
	// Within wake.LostWindow of its announcement (when it looked at doubling
	// intervals), and past it (when it looked at its safety poll).
	for _, waited := range []time.Duration{450 * time.Millisecond, 3 * wake.LostWindow} {
		t.Run(waited.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memory.New()
				recordPeer(t, store)
				owner, locked := mixedHandoff(t, store, &readCounter{}, waited)
				start := time.Now()
				owner.Unlock()
				if err := <-locked; err != nil {
					t.Fatal(err)
				}
				// NewMemClientOn polls every 100 ms; a wait grows by 1% at most.
				if d := time.Since(start); d > 101*time.Millisecond {
					t.Errorf("the waiter without hints held %v after the end, want at most the poll interval (safety poll: %v)", d, DefaultSafetyPoll)
				}
			})
		})
	}
}

// TestWaiterWithoutHintsFindsHintsRecordedLater: a waiter without hints
// that first looked before the process with hints recorded itself (they
// started together) finds it a second later, not peerCheckEvery later,
// and holds within the poll interval of the owner's Unlock. (TestElection's
// soak had one handoff at the safety poll so, with a 30 s wait after
// finding none.)
func TestWaiterWithoutHintsFindsHintsRecordedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		owner, locked := mixedHandoff(t, store, &readCounter{}, 500*time.Millisecond)
		recordPeer(t, store)
		time.Sleep(3 * wake.LostWindow)
		start := time.Now()
		owner.Unlock()
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 101*time.Millisecond {
			t.Errorf("the waiter without hints held %v after the end, want at most the poll interval", d)
		}
	})
}

// TestWaiterWithoutHintsPollsOnlyBesideHints: where no process that takes
// hints is recorded, a waiter without hints relies on the store's stream
// and does not poll: past its first second it reads the store only as
// the holder's session may expire and at its safety poll (a few reads in
// 30 s, where polling every 100 ms would make hundreds). Beside a
// recorded process with hints, it polls.
func TestWaiterWithoutHintsPollsOnlyBesideHints(t *testing.T) {
	for _, tc := range []struct {
		name     string
		peer     bool
		min, max int64
	}{
		{"NoPeers", false, 0, 15},
		{"Peers", true, 200, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rc := &readCounter{}
				store := memory.New()
				if tc.peer {
					recordPeer(t, store)
				}
				owner, locked := mixedHandoff(t, store, rc, 3*wake.LostWindow)
				before := rc.reads.Load()
				time.Sleep(30 * time.Second)
				n := rc.reads.Load() - before
				t.Logf("reads in 30 s: %d", n)
				if n < tc.min || n > tc.max {
					t.Errorf("the waiter read the store %d times in 30 s, want %d to %d", n, tc.min, tc.max)
				}
				owner.Unlock()
				if err := <-locked; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
