package hint

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestEndGoesLaterToWaitersThatOnlyCountIt: the end of a claim goes at
// once to the processes whose Waiting for it told a need of one end, or
// none (an older sender, a Mutex's waiter), and endDefer later to those
// that told they need more (a Semaphore's waiters short of several
// units, which only count it): before, it went to all at once, and on
// two cores the next holder read its turn more slowly while their
// processes woke.
func TestEndGoesLaterToWaitersThatOnlyCountIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := needFeed(t)
		now := f.store.ServerTime().Earliest
		until := now.Add(time.Minute)
		// Recorded in this order: the end goes to each group in it.
		for i, need := range []uint32{2, 0, 3, 1, 2} {
			f.noteInterest("k", 10, addr(i), until, told{from: "p" + addr(i), seq: 1, need: need})
		}
		if n := f.send(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10}); n != 5 {
			t.Errorf("send reported %d datagrams, want 5", n)
		}
		if got, want := rec.written(), []string{addr(1), addr(3)}; !slices.Equal(got, want) {
			t.Errorf("at once, the end went to %v, want %v: the waiters that told a need of 1 or none", got, want)
		}
		time.Sleep(endDefer - time.Microsecond)
		synctest.Wait()
		if got := rec.written(); len(got) != 2 {
			t.Errorf("before endDefer, the end went to %v, want only the two sent at once", got)
		}
		time.Sleep(time.Microsecond)
		synctest.Wait()
		if got, want := rec.written(), []string{addr(1), addr(3), addr(0), addr(2), addr(4)}; !slices.Equal(got, want) {
			t.Errorf("after endDefer, the end had gone to %v, want %v", got, want)
		}
	})
}

// TestNeedToldAgainTakesEffect: a waiter that tells that its need for a
// claim dropped to 1 (a kindNext hint, Feed.Tell) gets the claim's end
// at once; the owner's handler is not told (only the first Waiting
// reaches it: a Waiting has its process answer with Held hints and nudge
// its waiters). A Waiting of the same sender that arrives after (a lower
// seq) does not undo it. A kindNext from a waiter whose Waiting did not
// come stands for it: its sender is recorded, the handler told, and the
// end goes to it at once.
func TestNeedToldAgainTakesEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := needFeed(t)
		h := &eventLog{}
		f.h = h
		sent := f.store.ServerTime().Latest
		until := sent.Add(time.Hour)
		hint := func(kind byte, from string, seq uint64, a string, need uint32) {
			b, err := encode(msg{kind: kind, seq: seq, sent: sent, epoch: 10, until: until, from: from, addr: a, proc: "p" + from, key: "k", need: need, to: f.id}, f.key)
			if err != nil {
				t.Fatal(err)
			}
			f.take(b)
		}
		hint(kindWaiting, "a", 1, addr(0), 2)
		hint(kindWaiting, "b", 1, addr(1), 2)
		hint(kindNext, "a", 3, addr(0), 0)
		hint(kindWaiting, "a", 2, addr(0), 2) // sent before the kindNext, came after
		hint(kindNext, "c", 1, addr(2), 0)    // its Waiting was lost
		if got := h.waitings(); got != 4 {
			t.Errorf("the handler was told of %d Waitings, want 4 (not of the need told again)", got)
		}
		f.send(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
		if got, want := rec.written(), []string{addr(0), addr(2)}; !slices.Equal(got, want) {
			t.Errorf("at once, the end went to %v, want %v, which told a need of 1", got, want)
		}
		time.Sleep(endDefer)
		synctest.Wait()
		if got, want := rec.written(), []string{addr(0), addr(2), addr(1)}; !slices.Equal(got, want) {
			t.Errorf("after endDefer, the end had gone to %v, want %v", got, want)
		}
	})
}

// TestTellGoesToTheClaimsOwner: a need told again goes to the process
// that sent Held hints about the claim, its owner, alone; if none came,
// to every process recorded. Only a need of 1 is told.
func TestTellGoesToTheClaimsOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := needFeed(t)
		f.h = &eventLog{}
		now := f.store.ServerTime()
		f.mu.Lock()
		for i := range 3 {
			f.peersByID[fmt.Sprint("p", i)] = peer{addr: mustAddr(t, addr(40+i)), expires: now.Earliest.Add(time.Minute)}
		}
		f.mu.Unlock()
		b, err := encode(msg{kind: kindHeld, seq: 1, sent: now.Latest, epoch: 10, from: "p1", addr: addr(41), proc: "q", key: "k", to: f.id}, f.key)
		if err != nil {
			t.Fatal(err)
		}
		f.take(b)
		e := driver.Event{Kind: driver.Waiting, Key: "k", Epoch: 10, Until: now.Latest.Add(time.Hour), Need: 2, Proc: "me"}
		if f.Tell(e) || len(rec.written()) != 0 {
			t.Errorf("a need of 2 was told again: to %v", rec.written())
		}
		e.Need = 1
		if !f.Tell(e) {
			t.Error("Tell reported nothing sent")
		}
		if got, want := rec.written(), []string{addr(41)}; !slices.Equal(got, want) {
			t.Errorf("a need told again went to %v, want %v, the claim's owner", got, want)
		}
		e.Epoch = 11
		f.Tell(e)
		if got := rec.written(); len(got) != 4 {
			t.Errorf("a need told again of a claim whose owner is not known went to %v, want every process", got[1:])
		}
	})
}

// TestWaitingWithoutNeedIsServedAtOnce: a Waiting without a need (no
// need after the key: a Mutex's waiter, or one whose need is 1) is
// taken, with need unknown, and the end of its claim goes to its sender
// at once; a Waiting that tells a need of 2 is taken too, and its sender
// gets the end later.
func TestWaitingWithoutNeedIsServedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, rec := needFeed(t)
		f.h = nopHandler{}
		sent := f.store.ServerTime().Latest
		until := sent.Add(time.Hour)
		f.take(encodeWithoutNeed(msg{kind: kindWaiting, seq: 1, sent: sent, epoch: 10, until: until, from: "one", addr: addr(5), proc: "p", key: "k", to: f.id}, f.key))
		b, err := encode(msg{kind: kindWaiting, seq: 1, sent: sent, epoch: 10, until: until, from: "two", addr: addr(6), proc: "q", key: "k", need: 2, to: f.id}, f.key)
		if err != nil {
			t.Fatal(err)
		}
		f.take(b)
		if st := f.Stats(); st.Rejected != 0 || st.Taken != 2 {
			t.Fatalf("two Waiting hints, one without need: %+v, want both taken", st)
		}
		f.send(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 10})
		if got, want := rec.written(), []string{addr(5)}; !slices.Equal(got, want) {
			t.Errorf("at once, the end went to %v, want %v, the sender of the Waiting without need", got, want)
		}
		time.Sleep(endDefer)
		synctest.Wait()
		if got, want := rec.written(), []string{addr(5), addr(6)}; !slices.Equal(got, want) {
			t.Errorf("after endDefer, the end had gone to %v, want %v", got, want)
		}
	})
}

// TestWireNeed: a Waiting's need over 1 comes through as the event's
// Need; a need of 0 or 1 is not written, so that the datagram is that of
// a Waiting without need, byte for byte, which decodes with need unknown
// (0); a trailer that says 0 or 1, or of another length, is refused.
func TestWireNeed(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sent := time.Unix(1700000000, 123456789).UTC()
	m := msg{kind: kindWaiting, seq: 2, sent: sent, epoch: 9, until: sent.Add(time.Hour), from: "a", addr: "127.0.0.1:1", proc: "p", key: "k", to: "r"}
	for _, need := range []uint32{0, 1} {
		m.need = need
		b, err := encode(m, key)
		if err != nil {
			t.Fatal(err)
		}
		m.need = 0
		if plain := encodeWithoutNeed(m, key); !bytes.Equal(b, plain) {
			t.Errorf("a Waiting with need %d encodes to %x, want the format without need %x", need, b, plain)
		}
		got, err := decode(b, key, m.to)
		if err != nil || got != m {
			t.Errorf("decode of the format without need: %+v, %v; want %+v", got, err, m)
		}
		if e, ok := got.event(); !ok || e.Need != 0 {
			t.Errorf("the format without need gave the event %+v, want Need 0", e)
		}
	}
	m.need = 3
	b, err := encode(m, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(b, key, m.to)
	if err != nil || got != m {
		t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
	}
	if e, ok := got.event(); !ok || e.Kind != driver.Waiting || e.Need != 3 {
		t.Errorf("a Waiting with need 3 gave the event %+v, want Need 3", e)
	}
	m.need = 0
	body := encodeWithoutNeed(m, key)
	body = body[:len(body)-macLen]
	for _, tail := range [][]byte{{0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 2}, {0, 0, 0, 0, 2}} {
		c := append(bytes.Clone(body), tail...)
		if got, err := decode(append(c, sum(c, m.to, key)...), key, m.to); err == nil {
			t.Errorf("a Waiting ending in %x was taken: %+v", tail, got)
		}
	}
	// A need belongs to a Waiting alone: on another kind it is refused,
	// and not written.
	for _, kind := range []byte{kindHello, kindEnded, kindHeld, kindWelcome, kindNext} {
		m.kind, m.need = kind, 0
		body := encodeWithoutNeed(m, key)
		c := append(body[:len(body)-macLen:len(body)-macLen], 0, 0, 0, 2)
		if got, err := decode(append(c, sum(c, m.to, key)...), key, m.to); err == nil {
			t.Errorf("a hint of kind %d with a need of 2 was taken: %+v", kind, got)
		}
		m.need = 2
		b, err := encode(m, key)
		if err != nil {
			t.Fatal(err)
		}
		if plain := encodeWithoutNeed(m, key); !bytes.Equal(b, plain) {
			t.Errorf("a hint of kind %d with a need of 2 encodes to %x, want %x (no need)", kind, b, plain)
		}
	}
}

// encodeWithoutNeed is encode, written out without need.
func encodeWithoutNeed(m msg, key []byte) []byte {
	b := []byte(magic)
	b = append(b, m.kind)
	b = binary.BigEndian.AppendUint64(b, m.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(m.sent)))
	b = binary.BigEndian.AppendUint64(b, m.epoch)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(m.until)))
	for _, s := range []string{m.from, m.addr, m.proc, m.key} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	mac.Write(binary.BigEndian.AppendUint16(nil, uint16(len(m.to))))
	mac.Write([]byte(m.to))
	return mac.Sum(b)
}

// needFeed returns a Feed that holds a hint key and writes its
// datagrams nowhere but in the writeOrder returned.
func needFeed(t *testing.T) (*Feed, *writeOrder) {
	f, err := New(memory.New(), nil, Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &writeOrder{}
	f.mu.Lock()
	f.conn, f.key = rec, bytes.Repeat([]byte{7}, 32)
	f.mu.Unlock()
	return f, rec
}

// written returns where the datagrams went so far, in order.
func (w *writeOrder) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var got []string
	for _, a := range w.to {
		got = append(got, a.String())
	}
	return got
}

type nopHandler struct{}

func (nopHandler) Live(uint64)        {}
func (nopHandler) Down(error, bool)   {}
func (nopHandler) Event(driver.Event) {}

// eventLog is a handler that keeps the events it is told.
type eventLog struct {
	mu     sync.Mutex
	events []driver.Event
}

func (*eventLog) Live(uint64)      {}
func (*eventLog) Down(error, bool) {}
func (l *eventLog) Event(e driver.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// waitings returns how many Waiting events the handler was told.
func (l *eventLog) waitings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == driver.Waiting {
			n++
		}
	}
	return n
}
