package hint_test

import (
	"context"
	"crypto/rand"
	mrand "math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestHammerUnderFalseHints: processes take one key in turns, woken by
// hints, while a process with access to the store sends them valid but
// false hints (ends of claims that have not ended, of claims long ended,
// and of claims to come; announcements of waiters that do not exist) and
// anyone on the network sends them garbage. Nobody is ever inside with
// another, tokens rise in the order of the holds, and every round ends.
func TestHammerUnderFalseHints(t *testing.T) {
	const procs, rounds = 4, 25
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	ps := make([]process, procs)
	for i := range ps {
		ps[i] = newProcess(t, store, s, "", dsync.ClientWithPollInterval(50*time.Millisecond))
	}

	// The key's name in events, from a first announcement.
	first := contend(t, ctx, ps[0], ps[1], s)
	key := first.announced.Key
	first.release(t)

	var maxToken atomic.Uint64
	maxToken.Store(first.waiter.Token())
	chaosDone := make(chan struct{})
	stopChaos := make(chan struct{})
	go func() {
		defer close(chaosDone)
		chaos(t, ctx, store, s, key, &maxToken, stopChaos)
	}()

	var inside atomic.Int32
	var mu sync.Mutex
	var order []uint64 // tokens in the order their holds began
	var wg sync.WaitGroup
	for _, p := range ps {
		m := mutex(t, p.c, "k")
		wg.Go(func() {
			for range rounds {
				if err := m.LockContext(ctx); err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders inside at once", n)
				}
				mu.Lock()
				order = append(order, m.Token())
				mu.Unlock()
				for { // the chaos aims at the claims of now
					old := maxToken.Load()
					if m.Token() <= old || maxToken.CompareAndSwap(old, m.Token()) {
						break
					}
				}
				inside.Add(-1)
				m.Unlock()
			}
		})
	}
	wg.Wait()
	close(stopChaos)
	<-chaosDone
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("hold %d had token %d after %d", i, order[i], order[i-1])
		}
	}
	if len(order) != procs*rounds {
		t.Errorf("%d holds, want %d", len(order), procs*rounds)
	}
}

// chaos sends false hints until stop: valid ones through the spy, about
// epochs around the newest held, and garbage datagrams to every process.
func chaos(t *testing.T, ctx context.Context, store *memory.Store, s *spy, key string, maxToken *atomic.Uint64, stop chan struct{}) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	garbage := make([]byte, 200)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		top := maxToken.Load()
		epoch := max(1, top-3+mrand.Uint64N(7)) // from 3 below the newest to 3 above
		e := driver.Event{Kind: driver.Ended, Key: key, Epoch: epoch, Proc: "chaos"}
		if mrand.IntN(2) == 0 {
			e = driver.Event{Kind: driver.Waiting, Key: key, Epoch: epoch, Until: store.ServerTime().Latest.Add(time.Hour), Proc: "chaos"}
		}
		_ = s.f.Publish(ctx, e)
		peers, _ := store.Roles().Peers.Peers(ctx, store.ServerTime().Latest)
		for _, p := range peers {
			if addr, err := net.ResolveUDPAddr("udp", p.Addr); err == nil {
				_, _ = rand.Read(garbage)
				copy(garbage, "dsh2") // past the magic, to the MAC
				_, _ = conn.WriteTo(garbage, addr)
			}
		}
	}
}
