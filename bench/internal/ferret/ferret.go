// Package ferret runs the embedded FerretDB (v1.24, SQLite handler) that
// the benchmarks use when no MONGODB_URI is given: in a child process, so
// that the server's CPU time is not the benchmark's.
package ferret

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/ferretserve"
)

// Serve runs FerretDB with its data in dir, listening on addr
// ("127.0.0.1:0" picks a port), and writes its MongoDB URI as one line to
// uriOut once it listens. It returns when ctx ends, or when stdin reaches
// EOF if watchStdin is set (the parent died or is done).
func Serve(ctx context.Context, dir, addr string, uriOut io.Writer, watchStdin bool) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return ferretserve.ServeChild(ctx, dir, addr, logger, uriOut, watchStdin)
}

// A Server is a FerretDB child process.
type Server struct {
	URI   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Start re-executes the current binary with args (which must make it call
// Serve with watchStdin set and the URI on stdout) and waits for the URI.
func Start(args ...string) (*Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	s := &Server{cmd: cmd, stdin: stdin}
	select {
	case uri, ok := <-lines:
		if ok && strings.HasPrefix(uri, "mongodb://") {
			s.URI = uri
			return s, nil
		}
	case <-time.After(60 * time.Second):
	}
	s.Stop()
	return nil, errors.New("ferret: FerretDB child did not report a URI")
}

// PID is the child's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop ends the child and waits for it.
func (s *Server) Stop() {
	s.stdin.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}
