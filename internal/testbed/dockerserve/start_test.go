package dockerserve

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// Without an engine, Start says so at once, so that the harness falls
// back to its embedded server without waiting.
func TestStartWithoutEngine(t *testing.T) {
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-such.sock"))
	assertNoEngine(t)
}

// An endpoint that accepts connections and never answers counts as no
// engine, within the ping's bound.
func TestStartSilentEngine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c // hold it open, say nothing
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for c := range accepted {
			c.Close()
		}
	})
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	assertNoEngine(t)
}

func assertNoEngine(t *testing.T) {
	t.Helper()
	p, _ := NewPlan(Single, "p")
	start := time.Now()
	c, err := Start(context.Background(), p, "mongo", DefaultVersion, io.Discard)
	if !errors.Is(err, ErrNoEngine) || c != nil {
		t.Fatalf("Start: %v, %v; want ErrNoEngine", c, err)
	}
	// The bound is the ping's, with room for a loaded machine.
	if d := time.Since(start); d > 4*pingTimeout {
		t.Fatalf("Start took %v to find no engine", d)
	}
}
