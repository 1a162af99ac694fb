package hint

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestEndGoesOnlyToItsWaiters: the end of a claim goes to the processes
// that announced they wait for that very claim, the ones it can let go,
// and not to the others that wait for later claims of the key: with 16
// waiting processes, every release sent 17 hints (one to each of them),
// and 16 processes woke to check a hint that only the next could use.
// A waiter whose announcement lapsed gets none either.
func TestEndGoesOnlyToItsWaiters(t *testing.T) {
	f, to := endTargets(t)
	// Sixteen processes wait for claims 11 to 26 of "k"; two (ports 20000
	// and 20017, readers behind a writer, say) for claim 10; one announced
	// for claim 10 long ago, and no longer waits.
	for i := 16; i >= 1; i-- {
		f.noteInterest("k", uint64(10+i), addr(i), endUntil, told{})
	}
	f.noteInterest("k", 10, addr(0), endUntil, told{})
	f.noteInterest("k", 10, addr(17), endUntil, told{})
	noteWaiter(f.waitingFor, claimID{"k", 10}, addr(99), waiter{addr: mustAddr(t, addr(99)), until: endNow.Add(-time.Second), since: endNow.Add(-time.Minute)}, endNow)
	f.noteInterest("other", 10, addr(50), endUntil, told{})

	got := to(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
	if want := []string{addr(0), addr(17)}; !slices.Equal(got, want) {
		t.Errorf("the end of claim 10 went to %v, want only %v, which wait for that claim", got, want)
	}
}

// TestEndGoesToTheKeysWaitersWhenNoneWaitsForIt: if no process announced
// it waits for the claim that ended (its waiter's announcement was lost,
// or lapsed), the end goes to every process that waits for a claim of the
// key, as the next holder may be among them; if none waits for the key
// either, to every process recorded.
func TestEndGoesToTheKeysWaitersWhenNoneWaitsForIt(t *testing.T) {
	f, to := endTargets(t)
	for i := 3; i >= 1; i-- {
		f.noteInterest("k", uint64(10+i), addr(i), endUntil, told{})
	}
	noteWaiter(f.waitingFor, claimID{"k", 10}, addr(99), waiter{addr: mustAddr(t, addr(99)), until: endNow.Add(-time.Second), since: endNow.Add(-time.Minute)}, endNow)
	got := to(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
	if want := []string{addr(1), addr(2), addr(3)}; !slices.Equal(got, want) {
		t.Errorf("the end of claim 10, which no process waits for, went to %v, want %v, the key's waiters", got, want)
	}
	f.mu.Lock()
	f.peersByID["p"] = peer{addr: mustAddr(t, addr(60)), expires: endUntil}
	f.mu.Unlock()
	got = to(driver.Event{Kind: driver.Ended, Key: "nobody", Epoch: 1})
	if want := []string{addr(60)}; !slices.Equal(got, want) {
		t.Errorf("the end of a key no process waits for went to %v, want %v, every process", got, want)
	}
}

var (
	endNow   = time.Now()
	endUntil = endNow.Add(time.Minute)
)

func addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", 20000+i) }

// endTargets returns a Feed that writes its datagrams nowhere, and a
// function that sends an event through it and returns where it went,
// sorted, each address once.
func endTargets(t *testing.T) (*Feed, func(driver.Event) []string) {
	f, err := New(memory.New(), nil, Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &writeOrder{}
	f.mu.Lock()
	f.conn, f.key = rec, make([]byte, 32)
	f.mu.Unlock()
	return f, func(e driver.Event) []string {
		rec.mu.Lock()
		rec.to = nil
		rec.mu.Unlock()
		n := f.send(e)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var got []string
		for _, a := range rec.to {
			got = append(got, a.String())
		}
		if n != len(got) {
			t.Errorf("send reported %d datagrams, wrote %d", n, len(got))
		}
		slices.Sort(got)
		if c := slices.Compact(slices.Clone(got)); len(c) != len(got) {
			t.Errorf("an end went twice to a process: %v", got)
		}
		return got
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
// Once closed, it writes nothing and counts what it was asked to write.
type writeOrder struct {
	net.PacketConn
	mu          sync.Mutex
	to          []net.Addr
	closed      bool
	afterClosed int
}

func (w *writeOrder) WriteTo(b []byte, addr net.Addr) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.afterClosed++
		return 0, net.ErrClosed
	}
	w.to = append(w.to, addr)
	return len(b), nil
}

func (w *writeOrder) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

// TestEndGoesFirstToTheEarliestWaiter: the end of a claim goes to its
// waiters in the order they were first recorded as waiting for it
// (announcing again keeps a waiter's place): the next holder, which
// queued first and announced first, hears first. A full Semaphore's end
// goes to every waiter that passed the claim; written in the map's
// order, the next holder's hint came after others' up to half the time.
func TestEndGoesFirstToTheEarliestWaiter(t *testing.T) {
	f, _ := endTargets(t)
	k := claimID{"k", 10}
	// Twelve waiters, so that the map's order (which the end followed
	// before) matches theirs by chance almost never.
	ports := []int{7, 3, 9, 1, 5, 12, 2, 11, 4, 10, 8, 6}
	for i, port := range ports {
		at := endNow.Add(time.Duration(i) * time.Millisecond)
		noteWaiter(f.waitingFor, k, addr(port), waiter{addr: mustAddr(t, addr(port)), until: endUntil, since: at}, at)
	}
	// The first announces again, later, for longer: it keeps its place.
	later := endNow.Add(time.Second)
	noteWaiter(f.waitingFor, k, addr(7), waiter{addr: mustAddr(t, addr(7)), until: endUntil.Add(time.Hour), since: later}, later)
	rec := f.conn.(*writeOrder)
	f.send(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
	var got []string
	for _, a := range rec.to {
		got = append(got, a.String())
	}
	var want []string
	for _, port := range ports {
		want = append(want, addr(port))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the end of claim 10 went to %v in that order, want %v, the order its waiters were recorded in", got, want)
	}
}
