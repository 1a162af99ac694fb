package hint

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// The fuzz targets of FuzzDecode and the forgery tests stop at the MAC:
// random bytes never carry a valid one. These sign what they make, as a
// process with access to the store (which holds the hint key) can, so
// that what lies behind the MAC is explored: the parsing of a body, and
// what a receiver does with a hint it authenticated.

// FuzzDecodeSigned: any body, signed under the key, decodes to a hint
// that encodes back to the same datagram, or is refused; never a panic.
func FuzzDecodeSigned(f *testing.F) {
	key := []byte("key")
	for _, m := range []msg{
		{kind: kindWaiting, seq: 1, key: "k", proc: "p", need: 2},
		{kind: kindEnded, seq: 2, epoch: 7, from: "a", addr: "127.0.0.1:1", proc: "p", key: "k"},
		{kind: kindNext, seq: 3, epoch: 7, from: "a", addr: "127.0.0.1:1", key: "k"},
	} {
		b, err := encode(m, key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[len(magic) : len(b)-macLen])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := sign(append([]byte(magic), body...), key)
		m, err := decode(b, key, "")
		if err != nil {
			return
		}
		again, err := encode(m, key)
		if err != nil || string(again) != string(b) {
			t.Errorf("a signed body decoded to %+v, which encodes to %x, not %x (%v)", m, again, b, err)
		}
	})
}

// sign appends b's MAC under key, as sent to a process whose peer ID is
// empty.
func sign(b, key []byte) []byte {
	return append(b, sum(b, "", key)...)
}

// FuzzTakeAuthenticated: a receiver given authenticated hints of any
// content (a forger with the store's key) acts on each at most once,
// never on one sent more than maxAge from its estimate of the store's
// time, hands its handler only the events of Waiting, Ended, Held and
// Next hints, and never panics.
func FuzzTakeAuthenticated(f *testing.F) {
	f.Add(kindWaiting, uint64(1), int64(0), uint64(9), int64(time.Minute), "a", "127.0.0.1:1", "p", "k", uint32(3))
	f.Add(kindNext, uint64(2), int64(-time.Second), uint64(9), int64(0), "a", "127.0.0.1:1", "p", "k", uint32(0))
	f.Add(kindEnded, uint64(3), int64(11*time.Second), uint64(1), int64(0), "b", "[::1]:2", "", "", uint32(0))
	f.Add(kindHello, uint64(4), int64(0), uint64(0), int64(0), "c", "not an address", "", "", uint32(0))
	f.Add(kindEnded, uint64(6), int64(-time.Second), uint64(1), int64(0), "self", "127.0.0.1:4", "p", "k", uint32(0))
	f.Add(byte(200), uint64(5), int64(0), uint64(0), int64(0), "d", "127.0.0.1:3", "", "k", uint32(0))
	f.Fuzz(func(t *testing.T, kind byte, seq uint64, sentOff int64, epoch uint64, untilOff int64, from, addr, proc, key string, need uint32) {
		store := memory.New()
		fd, err := New(store, nil, Config{Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		hkey := make([]byte, 32)
		rec := newRecorder()
		fd.mu.Lock()
		fd.conn, fd.key = &writeOrder{}, hkey
		fd.mu.Unlock()
		fd.h = rec

		if from == "self" { // this process's own ID, which the fuzzer cannot guess
			from = fd.id
		}
		now := store.ServerTime()
		sent := now.Earliest.Add(time.Duration(sentOff))
		if sentOff == 0 {
			sent = time.Time{} // also the zero time
		}
		m := msg{kind: kind, seq: seq, sent: sent, epoch: epoch, until: now.Latest.Add(time.Duration(untilOff)), from: from, addr: addr, proc: proc, key: key, need: need, to: fd.id}
		if untilOff == 0 {
			m.until = time.Time{}
		}
		b, err := encode(m, hkey)
		if err != nil {
			return // too long for a datagram: never sent
		}
		fd.take(b)
		fd.take(b)        // played again
		got := rec.events // the calls above return after their events

		if len(got) > 1 {
			t.Fatalf("one hint taken twice: %d events %+v from %+v", len(got), got, m)
		}
		if len(got) == 0 {
			return
		}
		fresh := !sent.Before(now.Earliest.Add(-maxAge)) && !sent.After(store.ServerTime().Latest.Add(maxAge))
		if !fresh {
			t.Fatalf("a hint sent %v from the store's time was acted on: %+v", sent.Sub(now.Earliest), got[0])
		}
		if from == fd.id {
			t.Fatalf("a hint from this process itself was acted on: %+v", got[0])
		}
		e := got[0]
		want := map[byte]driver.EventKind{kindWaiting: driver.Waiting, kindNext: driver.Waiting, kindEnded: driver.Ended, kindHeld: driver.Held}
		k, ok := want[kind]
		if !ok || e.Kind != k || e.Key != key || e.Epoch != epoch {
			t.Fatalf("a hint %+v gave the event %+v", m, e)
		}
	})
}
