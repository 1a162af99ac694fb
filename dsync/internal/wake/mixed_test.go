package wake

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// countingPeers is a peer store that counts its reads of the peers, and
// fails them while failing is set.
type countingPeers struct {
	*memory.Store
	reads   atomic.Int64
	failing atomic.Bool
}

func countPeerReads(store *memory.Store) *countingPeers {
	c := &countingPeers{}
	c.Store = store.Intercept(func(_ context.Context, call memory.Call, _ func() error) error {
		if call.Op != "Peers" {
			return nil
		}
		if c.reads.Add(1); c.failing.Load() {
			return errors.New("no answer")
		}
		return nil
	})
	return c
}

// TestPeerRecordsReadEveryThirtySeconds: a waiter without hints reads
// whether processes that take hints are recorded at most once per
// peerCheckEvery (30 s) while some are, so a lapse counts from the next
// read on; after a read that found none, again LostWindow later, then at
// doubling intervals up to peerCheckEvery (a process recorded meanwhile
// counts soon; a store without any costs a read every 30 s). A read that
// fails counts as finding some (the waiter polls), and is made again
// LostWindow later. A Client with hints never reads them.
func TestPeerRecordsReadEveryThirtySeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		peers := countPeerReads(store)
		env := testEnv(store, defaultPoll, defaultSafetyPoll)
		env.Peers = PeersOf(peers, false)
		w := New(env, &publishes{}, "me").peerSeen
		ctx := context.Background()
		// None recorded: a look every 100 ms for two minutes reads at 0,
		// 1, 3, 7, 15, 31, 61, 91 s.
		for range 1200 {
			if w.hintsAround(ctx) {
				t.Fatal("processes with hints found where none is recorded")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := peers.reads.Load(); n != 8 {
			t.Errorf("%d reads of the peers in 2 minutes without any recorded, want 8", n)
		}

		// One recorded after the last read that found none (at 91 s) is
		// found at the next (121 s), and then holds for 30 s.
		p := driver.Peer{ID: "p", Addr: "127.0.0.1:9", ExpiresAt: store.ServerTime().Latest.Add(time.Hour)}
		if err := store.Roles().Peers.PutPeer(ctx, p); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // 121 s
		if !w.hintsAround(ctx) {
			t.Error("a process recorded with hints not found at the next read")
		}
		if err := store.Roles().Peers.PutPeer(ctx, driver.Peer{ID: "p", ExpiresAt: store.ServerTime().Earliest}); err != nil {
			t.Fatal(err) // lapsed: none recorded now
		}
		time.Sleep(peerCheckEvery - time.Second)
		if !w.hintsAround(ctx) {
			t.Error("processes with hints found lapsed before peerCheckEvery passed since they were found")
		}
		if n := peers.reads.Load(); n != 9 {
			t.Errorf("%d reads of the peers, want 9", n)
		}
		time.Sleep(time.Second)
		peers.failing.Store(true)
		// Two looks in a row: the first reads and fails, the second
		// comes before the read is due again.
		first, second := w.hintsAround(ctx), w.hintsAround(ctx)
		if !first || !second {
			t.Error("a failed read of the peers did not count as finding some")
		}
		if n := peers.reads.Load(); n != 10 {
			t.Errorf("%d reads of the peers, want 10: a failed read is made again LostWindow later, not at the next look", n)
		}
		peers.failing.Store(false)
		time.Sleep(LostWindow)
		if w.hintsAround(ctx) {
			t.Error("processes with hints found after every record lapsed")
		}

		if PeersOf(peers, true) != nil {
			t.Error("a Client with hints reads the peers")
		}
	})
}
