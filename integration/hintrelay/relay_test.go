package hintrelay

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"net"
	"testing"
	"time"
)

// sink is a UDP socket that collects what reaches it.
func sink(t *testing.T) (*net.UDPConn, func(n int) [][]byte) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, func(n int) [][]byte {
		var got [][]byte
		buf := make([]byte, 1<<16)
		for len(got) < n {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			k, _, err := c.ReadFromUDP(buf)
			if err != nil {
				t.Fatalf("after %d datagrams: %v", len(got), err)
			}
			got = append(got, append([]byte(nil), buf[:k]...))
		}
		return got
	}
}

func relayTo(t *testing.T, to *net.UDPConn, f Faults) (*Relay, func([]byte)) {
	t.Helper()
	r, err := New(to.LocalAddr().String(), f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	out, err := net.Dial("udp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return r, func(b []byte) {
		if _, err := out.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// signed is a datagram shaped as a hint: a body and its MAC under key.
func signed(body string, key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum([]byte(body))
}

func TestRelayFaults(t *testing.T) {
	key := []byte("the store's key")
	valid := func(b []byte) bool {
		return len(b) > macLen && hmac.Equal(b[len(b)-macLen:], signed(string(b[:len(b)-macLen]), key)[len(b)-macLen:])
	}

	t.Run("duplicate", func(t *testing.T) {
		c, read := sink(t)
		r, send := relayTo(t, c, Faults{Duplicate: 1})
		send(signed("a", key))
		if got := read(2); !bytes.Equal(got[0], got[1]) {
			t.Errorf("not a duplicate: %q", got)
		}
		if n := r.Counts(); n.Duplicated != 1 || n.Passed != 1 {
			t.Errorf("counts %+v", n)
		}
	})
	t.Run("drop", func(t *testing.T) {
		c, read := sink(t)
		r, send := relayTo(t, c, Faults{Drop: 1})
		send(signed("a", key))
		for r.Counts().Dropped == 0 {
			time.Sleep(time.Millisecond)
		}
		r.SetFaults(Faults{})
		send(signed("b", key))
		if got := read(1); string(got[0][:1]) != "b" {
			t.Errorf("the dropped datagram arrived: %q", got[0])
		}
	})
	t.Run("delay", func(t *testing.T) {
		c, read := sink(t)
		r, send := relayTo(t, c, Faults{Delay: 1, MaxDelay: time.Second})
		send(signed("late", key))
		for r.Counts().Delayed == 0 {
			time.Sleep(time.Millisecond)
		}
		r.SetFaults(Faults{})
		send(signed("soon", key))
		// Up to a second late: "soon" is very likely first; both arrive.
		got := read(2)
		n := r.Counts()
		if n.Delayed != 1 || n.Passed != 2 {
			t.Errorf("counts %+v; got %q", n, got)
		}
		if overtaken := string(got[0][:4]) == "soon"; overtaken != (n.Overtaken == 1) {
			t.Errorf("arrived %q; counted overtaken %d", got, n.Overtaken)
		}
	})
	t.Run("forgeries", func(t *testing.T) {
		c, read := sink(t)
		r, send := relayTo(t, c, Faults{Forge: 1})
		// Of a forgery (or garbage) and the hint, only the hint passes
		// the MAC under the store's key.
		oneValid := func(what string, got [][]byte) {
			t.Helper()
			n := 0
			for _, b := range got {
				if valid(b) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s and a hint: %d pass the MAC, want 1: %q", what, n, got)
			}
		}
		for range 20 { // both kinds of forgery, likely
			send(signed("a hint of some length", key))
			oneValid("a forgery", read(2))
		}
		if n := r.Counts(); n.Forged != 20 {
			t.Errorf("counts %+v", n)
		}
		r.SetFaults(Faults{Garbage: 1})
		send(signed("b", key))
		oneValid("garbage", read(2))
	})
	t.Run("replay", func(t *testing.T) {
		c, read := sink(t)
		r, send := relayTo(t, c, Faults{})
		send(signed("first", key))
		read(1)
		r.SetFaults(Faults{Replay: 1})
		send(signed("second", key))
		got := read(2)
		if string(got[0][:5]) != "first" && string(got[1][:5]) != "first" {
			t.Errorf("no replay of the first: %q", got)
		}
	})
}
