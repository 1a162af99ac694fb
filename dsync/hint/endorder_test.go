package hint

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestEndGoesFirstToItsWaiter: the end of a claim goes to every process
// that announced it waits for a claim of the key, and first to the one
// that waits for that very claim, whichever order the announcements came
// in: that process holds next, and its walk should not wait for the
// datagrams to the others.
func TestEndGoesFirstToItsWaiter(t *testing.T) {
	f, err := New(memory.New(), nil, Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	until := now.Add(time.Minute)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", 20000+i) }
	// Sixteen processes wait for claims 11 to 26 of "k", announced in
	// reverse; the one at port 20000 waits for claim 10; one announced
	// for claim 10 long ago, and no longer waits.
	for i := 16; i >= 1; i-- {
		f.noteInterest("k", uint64(10+i), addr(i), until)
	}
	f.noteInterest("k", 10, addr(0), until)
	noteWaiter(f.waitingFor, claimID{"k", 10}, addr(99), waiter{mustAddr(t, addr(99)), now.Add(-time.Second)}, now)
	f.noteInterest("other", 10, addr(50), until)

	rec := &writeOrder{}
	f.mu.Lock()
	f.conn, f.key = rec, make([]byte, 32)
	f.mu.Unlock()
	if n := f.send(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10}); n != 17 {
		t.Fatalf("the end went to %d processes, want 17", n)
	}
	to := rec.to
	if len(to) != 17 {
		t.Fatalf("the end goes to %d processes, want the 17 that wait for a claim of the key: %v", len(to), to)
	}
	if got := to[0].String(); got != addr(0) {
		t.Fatalf("the end goes first to %s, want %s, which waits for the claim: %v", got, addr(0), to)
	}
	seen := make(map[string]bool)
	for _, a := range to {
		if seen[a.String()] {
			t.Fatalf("the end goes twice to %s: %v", a, to)
		}
		seen[a.String()] = true
	}
}

func mustAddr(t *testing.T, s string) *net.UDPAddr {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeOrder is a net.PacketConn that keeps where datagrams were written,
// in order, and sends none.
type writeOrder struct {
	net.PacketConn
	mu sync.Mutex
	to []net.Addr
}

func (w *writeOrder) WriteTo(b []byte, addr net.Addr) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.to = append(w.to, addr)
	return len(b), nil
}
