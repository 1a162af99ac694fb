package hint

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

func TestWireRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	sent := time.Unix(1700000000, 123456789).UTC()
	for _, m := range []msg{
		{kind: kindHello, seq: 1, sent: sent, from: "a", addr: "127.0.0.1:1", to: "r"},
		{kind: kindWaiting, seq: 2, sent: sent, epoch: 9, until: sent.Add(time.Hour), from: "a", addr: "127.0.0.1:1", proc: "p", key: "k/ü", to: "r"},
		{kind: kindEnded, seq: 3, sent: sent, epoch: 1 << 60, from: "a", addr: "[::1]:2", proc: "p", key: ""},
		{kind: kindWaiting, seq: 4, sent: sent, epoch: 9, until: sent.Add(time.Hour), from: "a", addr: "127.0.0.1:1", proc: "p", key: "k", need: 1 << 31, to: "r"},
	} {
		b, err := encode(m, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(b, key, m.to)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", m, err)
		}
		if got != m {
			t.Errorf("decode(encode(%+v)) = %+v", m, got)
		}
	}
}

// TestWireRefusesForgeries: a hint under another key, or decoded by
// another process than the one it was sent to, or with any byte changed,
// or cut short, is refused.
func TestWireRefusesForgeries(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	m := msg{kind: kindEnded, seq: 5, sent: time.Now(), epoch: 3, from: "a", addr: "127.0.0.1:9", proc: "p", key: "k", to: "b"}
	b, err := encode(m, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode(b, bytes.Repeat([]byte{8}, 32), "b"); err == nil {
		t.Error("a hint under another key was taken")
	}
	for _, other := range []string{"", "v", "b ", "bb"} {
		if _, err := decode(b, key, other); err == nil {
			t.Errorf("a hint sent to %q was taken by %q", m.to, other)
		}
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, err := decode(c, key, "b"); err == nil {
			t.Fatalf("a hint with byte %d changed was taken", i)
		}
	}
	for n := range len(b) {
		if _, err := decode(b[:n], key, "b"); err == nil {
			t.Fatalf("a hint cut to %d bytes was taken", n)
		}
	}
}

// TestWireRefusesTheUnboundFormat: a hint of a release before hints were
// bound to their receiver (magic "dsh1", a MAC over the datagram alone)
// is refused, under the right key; ours begin with another magic, which
// such a release refuses as malformed.
func TestWireRefusesTheUnboundFormat(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	m := msg{kind: kindHeld, seq: 5, sent: time.Now(), epoch: 3, from: "a", addr: "127.0.0.1:9", proc: "p", key: "k", to: "b"}
	b, err := encode(m, key)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) == "dsh1" {
		t.Fatal("hints bound to their receiver carry the unbound format's magic")
	}
	old := append([]byte("dsh1"), b[4:len(b)-macLen]...)
	mac := hmac.New(sha256.New, key)
	mac.Write(old)
	for _, self := range []string{"b", ""} {
		if got, err := decode(mac.Sum(old), key, self); err == nil {
			t.Errorf("a hint in the unbound format was taken by %q: %+v", self, got)
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
	b, _ := encode(msg{kind: kindWaiting, seq: 1, key: "k", proc: "p", to: "r"}, key)
	f.Add(b)
	b, _ = encode(msg{kind: kindWaiting, seq: 1, key: "k", proc: "p", need: 2, to: "r"}, key)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b, key, "r")
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
		m, err := decode(b, key, "")
		if err != nil {
			t.Fatal(err)
		}
		e, ok := m.event()
		if !ok || e.Kind != driver.Held || !e.Until.Equal(until) {
			t.Errorf("a Held hint with until %v gave the event %+v (ok %v); want a Held with that Until", until, e, ok)
		}
	}
}
