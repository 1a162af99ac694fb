package hint

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// Hints recorded on the network by someone without the store's key, and
// played again.

// tap is a process's advertised address that records the datagrams sent
// to it and passes them on to where the process listens, as a machine
// on the path can.
type tap struct {
	conn net.PacketConn
	mu   sync.Mutex
	to   net.Addr
	got  [][]byte
}

func newTap(t *testing.T) *tap {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{conn: conn}
	done := make(chan struct{})
	t.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, maxDatagram+1)
		for {
			n, _, err := conn.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			tp.mu.Lock()
			tp.got = append(tp.got, append([]byte(nil), buf[:n]...))
			to := tp.to
			tp.mu.Unlock()
			if to != nil {
				_, _ = conn.WriteTo(buf[:n], to)
			}
		}
	}()
	return tp
}

func (tp *tap) recorded() [][]byte {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([][]byte(nil), tp.got...)
}

// tokensBack waits until f's guard has all its tokens again.
func tokensBack(t *testing.T, f *Feed) {
	t.Helper()
	g := f.guard
	waitUntil(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.tokens+g.rate*(g.mono()-g.filled).Seconds() >= g.cap
	})
}

// TestHintsPlayedAgainAreDropped: 150 Held hints that one process sent
// another, recorded on their way, are dropped when played to a third
// process (which then takes the real hints sent to it, all of them), and
// those the receiver refused over the rate are not taken when played to
// it again once its tokens came back.
func TestHintsPlayedAgainAreDropped(t *testing.T) {
	store := memory.New()
	tp := newTap(t)
	// b's rate is low enough that the 150 hints sent it at once go over
	// it even when a busy machine spreads their sends over seconds: at
	// the default rate (200 a second past a burst of 100), a quarter of
	// a second between the first and the last let b take them all.
	b, err := New(store, nil, Config{Listen: "127.0.0.1:0", Advertise: tp.conn.LocalAddr().String(), Rate: 10, Burst: 20})
	if err != nil {
		t.Fatal(err)
	}
	brec := newRecorder()
	t.Cleanup(b.Follow(brec))
	waitUntil(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.key != nil })
	b.mu.Lock()
	listens := b.conn.LocalAddr()
	b.mu.Unlock()
	tp.mu.Lock()
	tp.to = listens
	tp.mu.Unlock()
	bf := follower{f: b, rec: brec}
	a, v := follow(t, store, nil), follow(t, store, nil)
	for _, x := range []follower{a, bf, v} {
		for _, y := range []follower{a, bf, v} {
			if x.f != y.f {
				knows(t, x, y)
			}
		}
	}

	ctx := context.Background()
	until := store.ServerTime().Latest.Add(time.Hour)
	heldOf := func(key string, epoch uint64) func(driver.Event) bool {
		return func(e driver.Event) bool { return e.Kind == driver.Held && e.Key == key && e.Epoch == epoch }
	}
	// b waits for k/1 and for marker/1; v for k/2.
	for _, w := range []struct {
		f   follower
		key string
		ep  uint64
	}{{bf, "k", 1}, {bf, "marker", 1}, {v, "k", 2}} {
		if err := w.f.f.Publish(ctx, driver.Event{Kind: driver.Waiting, Key: w.key, Epoch: w.ep, Until: until, Proc: "w"}); err != nil {
			t.Fatal(err)
		}
		a.rec.waitFor(t, func(e driver.Event) bool { return e.Kind == driver.Waiting && e.Key == w.key && e.Epoch == w.ep })
	}
	// marker sends b a Held of marker/1 and waits until b took it: the
	// datagrams sent b before it have been read by then. Sent once b's
	// tokens came back, it is taken unless hints still on their way
	// spent them again (the tap forwards late on a busy machine): then
	// it is refused, and sent again.
	marker := func() {
		t.Helper()
		took := brec.count(heldOf("marker", 1))
		deadline := time.Now().Add(time.Minute)
		for {
			tokensBack(t, b)
			_ = a.f.Publish(ctx, driver.Event{Kind: driver.Held, Key: "marker", Epoch: 1, Proc: "a"})
			for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(time.Millisecond) {
				if brec.count(heldOf("marker", 1)) > took {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("b never took a marker sent after the hints (stats %+v)", b.Stats())
			}
		}
	}

	const n = 150
	for range n {
		_ = a.f.Publish(ctx, driver.Event{Kind: driver.Held, Key: "k", Epoch: 1, Proc: "a"})
	}
	marker()
	var played [][]byte
	for _, d := range tp.recorded() {
		// A Held whose key, the last field before the MAC, is "k".
		if len(d) > len(magic)+macLen && d[len(magic)] == kindHeld && bytes.HasSuffix(d[:len(d)-macLen], []byte{0, 1, 'k'}) {
			played = append(played, d)
		}
	}
	if len(played) != n {
		t.Fatalf("%d Held hints recorded on their way to b, want %d", len(played), n)
	}
	tookB := brec.count(heldOf("k", 1))
	if st := b.Stats(); st.Refused == 0 || tookB == n {
		t.Fatalf("b took %d of %d Held hints at once (stats %+v): want some refused over the rate", tookB, n, st)
	}

	// Played to v: none is taken, and no token spent.
	before := v.f.Stats()
	send := sender(t, v.f)
	for _, d := range played {
		send(d)
	}
	// Wait until v has judged every one (Received is counted when a
	// datagram is read, before it is judged).
	waitUntil(t, func() bool {
		st := v.f.Stats()
		return st.Rejected+st.Refused+st.Taken-before.Rejected-before.Refused-before.Taken >= n
	})
	if got := v.rec.count(heldOf("k", 1)); got != 0 {
		t.Errorf("v passed on %d of the %d Held hints sent to b and played to it", got, n)
	}
	if st := v.f.Stats(); st.Rejected-before.Rejected != n || st.Taken-before.Taken > 1 {
		t.Errorf("after the hints played to v: %+v (before: %+v); want all %d rejected", st, before, n)
	}
	// The real hints v is sent next are all taken.
	const real = 20
	for range real {
		_ = a.f.Publish(ctx, driver.Event{Kind: driver.Held, Key: "k", Epoch: 2, Proc: "a"})
	}
	waitUntil(t, func() bool { return v.rec.count(heldOf("k", 2)) == real })

	// Played to b again, once its tokens came back: none is taken,
	// neither those it took nor those it refused.
	tokensBack(t, b)
	sendB := sender(t, b)
	for _, d := range played {
		sendB(d)
	}
	marker()
	if got := brec.count(heldOf("k", 1)); got != tookB {
		t.Errorf("b passed on %d Held hints after the %d sent to it were played again, want the %d it took before", got, n, tookB)
	}
}
