package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes every line back.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	_, err := r.ReadString('\n')
	return time.Since(start), err
}

func TestProxyForwardsPartitionsAndDelays(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)

	if _, err := roundTrip(t, c, r, 5*time.Second); err != nil {
		t.Fatalf("forwarding: %v", err)
	}

	// A partition holds the request back: no reply...
	p.Partition(Both)
	if _, err := roundTrip(t, c, r, 200*time.Millisecond); err == nil {
		t.Fatal("a reply came through the partition")
	}
	// ...until it heals, when the held request is delivered after all.
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("held request not delivered after healing: %v", err)
	}

	// Replies only: a one-way partition.
	p.Partition(Down)
	if _, err := roundTrip(t, c, r, 200*time.Millisecond); err == nil {
		t.Fatal("a reply came through the one-way partition")
	}
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	p.SetDelay(Down, 300*time.Millisecond)
	took, err := roundTrip(t, c, r, 5*time.Second)
	if err != nil || took < 300*time.Millisecond {
		t.Fatalf("delayed round trip took %v, err %v", took, err)
	}
	p.SetDelay(Both, 0)
	if _, err := roundTrip(t, c, r, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	p.Reset()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("connection survived Reset")
	}
}
