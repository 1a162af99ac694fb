package hint

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

func TestWireRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sent := time.Unix(1700000000, 123456789).UTC()
	for _, m := range []msg{
		{kind: kindHello, seq: 1, sent: sent, from: "a", addr: "127.0.0.1:1"},
		{kind: kindWaiting, seq: 2, sent: sent, epoch: 9, until: sent.Add(time.Hour), from: "a", addr: "127.0.0.1:1", proc: "p", key: "k/ü"},
		{kind: kindEnded, seq: 3, sent: sent, epoch: 1 << 60, from: "a", addr: "[::1]:2", proc: "p", key: ""},
		{kind: kindWaiting, seq: 4, sent: sent, epoch: 9, until: sent.Add(time.Hour), from: "a", addr: "127.0.0.1:1", proc: "p", key: "k", need: 1 << 31},
	} {
		b, err := encode(m, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(b, key)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", m, err)
		}
		if got != m {
			t.Errorf("decode(encode(%+v)) = %+v", m, got)
		}
	}
}

// TestWireRefusesForgeries: a hint under another key, or with any byte
// changed, or cut short, is refused.
func TestWireRefusesForgeries(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	m := msg{kind: kindEnded, seq: 5, sent: time.Now(), epoch: 3, from: "a", addr: "127.0.0.1:9", proc: "p", key: "k"}
	b, err := encode(m, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode(b, bytes.Repeat([]byte{8}, 32)); err == nil {
		t.Error("a hint under another key was taken")
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := decode(c, key); err == nil {
			t.Fatalf("a hint with byte %d changed was taken", i)
		}
	}
	for n := range len(b) {
		if _, err := decode(b[:n], key); err == nil {
			t.Fatalf("a hint cut to %d bytes was taken", n)
		}
	}
}

func TestWireRefusesTooLong(t *testing.T) {
	m := msg{kind: kindEnded, key: string(make([]byte, maxDatagram))}
	if _, err := encode(m, []byte("k")); err == nil {
		t.Error("a hint longer than a datagram was encoded")
	}
}

func FuzzDecode(f *testing.F) {
	key := []byte("key")
	b, _ := encode(msg{kind: kindWaiting, seq: 1, key: "k", proc: "p"}, key)
	f.Add(b)
	b, _ = encode(msg{kind: kindWaiting, seq: 1, key: "k", proc: "p", need: 2}, key)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b, key)
		if err != nil {
			return
		}
		// Whatever decodes, encodes back to itself.
		again, err := encode(m, key)
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("decode then encode changed the hint: %x to %x (%v)", b, again, err)
		}
	})
}

// TestHeldCarriesItsSessionsExpiry: a Held hint's until (the claim's
// session's confirmed expiry) comes through as the event's Until; a
// Held from a sender that tells none (an older release: until zero)
// comes with none.
func TestHeldCarriesItsSessionsExpiry(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sent := time.Unix(1700000000, 123456789).UTC()
	for _, until := range []time.Time{sent.Add(15 * time.Second), {}} {
		b, err := encode(msg{kind: kindHeld, seq: 4, sent: sent, epoch: 3, until: until, from: "a", addr: "127.0.0.1:1", proc: "p", key: "k"}, key)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decode(b, key)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := m.event()
		if !ok || e.Kind != driver.Held || !e.Until.Equal(until) {
			t.Errorf("a Held hint with until %v gave the event %+v (ok %v); want a Held with that Until", until, e, ok)
		}
	}
}
