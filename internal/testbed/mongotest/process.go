package mongotest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Process is an embedded FerretDB in its own child process, for fault
// tests: it can be killed and restarted on the same data dir and port, so
// clients keep their URI across restarts, and paused and resumed (a store
// outage for every client at once, see [Process.Pause]).
//
// Kill and Stop may be called from any goroutine; StartProcess, Restart,
// Pause and Resume call tb.Fatal and so belong to the test goroutine.
type Process struct {
	tb   testing.TB
	dir  string // data dir
	log  string // children's stderr, appended across restarts
	addr string // 127.0.0.1:port, fixed after the first start
	uri  string
	pg   string // the PostgreSQL database with DSYNC_MONGOTEST_BACKEND=postgresql, else ""

	mu     sync.Mutex
	c      *child // nil when not running
	paused bool   // Pause was called and Resume not yet
}

// StartProcess starts a FerretDB child process (always FerretDB, whatever
// [Shared] resolved to) with its own temp data dir on a loopback port picked
// at start and kept for restarts. It is stopped in tb.Cleanup; when the
// test failed, its stderr is kept first (keepForDiagnosis). A paused
// process ([Process.Pause]) is resumed there before it is asked to exit,
// so that no test, failed or not, leaves a stopped server behind. With
// DSYNC_MONGOTEST_BACKEND=postgresql its data is in a PostgreSQL database
// of its own instead (on the test binary's PostgreSQL), which outlives
// its kills and restarts as the data dir does.
func StartProcess(tb testing.TB) *Process {
	tb.Helper()
	base := tb.TempDir()
	p := &Process{tb: tb, dir: filepath.Join(base, "data"), log: filepath.Join(base, "stderr.log"), addr: "127.0.0.1:0"}
	pg, err := embeddedPostgresDatabase()
	if err != nil {
		tb.Fatalf("mongotest: StartProcess: %v", err)
	}
	p.pg = pg
	c, err := p.start(10 * time.Second)
	if err != nil {
		tb.Fatalf("mongotest: StartProcess: %v", err)
	}
	u, err := url.Parse(c.uri)
	if err != nil {
		c.kill()
		tb.Fatalf("mongotest: StartProcess: bad URI %q: %v", c.uri, err)
	}
	p.addr = u.Host
	p.uri = c.uri
	p.c = c
	tb.Cleanup(func() {
		if tb.Failed() {
			p.keepForDiagnosis()
		}
		p.Stop()
	})
	return p
}

// start launches the child and pings it, retrying (e.g. while the port is
// still held by a dying predecessor) for up to retryFor.
func (p *Process) start(retryFor time.Duration) (*child, error) {
	deadline := time.Now().Add(retryFor)
	for {
		c, err := startChild(p.dir, p.addr, p.pg, p.log)
		if err == nil {
			if err = pingURI(c.uri, 30*time.Second); err == nil {
				return c, nil
			}
			c.kill()
			err = fmt.Errorf("FerretDB at %s does not answer: %w; stderr:\n%s", c.uri, err, c.stderr())
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// URI returns the connection string; it does not change across restarts.
func (p *Process) URI() string { return p.uri }

// Dir returns the data directory.
func (p *Process) Dir() string { return p.dir }

// Pid returns the current process id, or 0 when not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return 0
	}
	return p.c.pid()
}

// Running reports whether the process was started and not yet stopped or
// killed through p (a crash of the child is not noticed until Kill/Stop).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c != nil
}

// Kill sends SIGKILL and waits until the process is gone. No-op if not
// running. A paused process is killed all the same.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		p.c.kill()
		p.c = nil
	}
	p.paused = false
}

// Stop asks the process to exit (SIGTERM, stdin closed) and waits; it is
// killed if it does not exit within 15 s. No-op if not running. Expect it to
// take ~3 s while clients hold connections: FerretDB gives them 3 s to
// disconnect before closing them. A paused process is resumed to exit.
func (p *Process) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		if err := p.c.stop(15 * time.Second); err != nil {
			p.tb.Logf("mongotest: Process.Stop: %v", err)
		}
		p.c = nil
	}
	p.paused = false
}

// Restart starts the process again on the same data dir and port (stopping
// it first if it is still running) and waits until it accepts connections.
func (p *Process) Restart() {
	p.tb.Helper()
	p.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.start(15 * time.Second)
	if err != nil {
		p.tb.Fatalf("mongotest: Process.Restart on %s: %v", p.addr, err)
	}
	if c.uri != p.uri {
		c.kill()
		p.tb.Fatalf("mongotest: Process.Restart: URI changed from %s to %s", p.uri, c.uri)
	}
	p.c = c
}

// Pause stops the server process with SIGSTOP: a store outage for every
// client at once, the way a stalled primary or an election looks from
// the clients, until [Process.Resume]. The kernel keeps the process's
// sockets: connections stay open and new ones complete their handshake
// in the listen backlog, but nothing is read or answered, so every
// request waits (or times out, and its client gives the connection up)
// and no error comes back. The data, the port and the process are kept,
// and the server's clock (the wall clock) runs on meanwhile. Pause fails
// the test if the process is not running or is paused already; call it
// from the test goroutine.
func (p *Process) Pause() {
	p.tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.c == nil:
		p.tb.Fatalf("mongotest: Process.Pause: not running")
	case p.paused:
		p.tb.Fatalf("mongotest: Process.Pause: paused already")
	}
	if err := sigStop(p.c.cmd.Process); err != nil {
		p.tb.Fatalf("mongotest: Process.Pause: %v", err)
	}
	p.paused = true
}

// Resume ends a [Process.Pause] with SIGCONT: the server carries on from
// where it stopped, with its data, and reads and answers what its
// clients sent meanwhile and did not give up on (requests landing late).
// It fails the test unless the process is paused; call it from the test
// goroutine.
func (p *Process) Resume() {
	p.tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil || !p.paused {
		p.tb.Fatalf("mongotest: Process.Resume: not paused")
	}
	if err := sigCont(p.c.cmd.Process); err != nil {
		p.tb.Fatalf("mongotest: Process.Resume: %v", err)
	}
	p.paused = false
}

// Paused reports whether the process is paused ([Process.Pause]).
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// StartFrontEnd starts another FerretDB process over the PostgreSQL
// database of [Shared]'s server, as people run several FerretDB front ends
// over one database, and returns its URI; it is stopped in tb.Cleanup.
// It skips the test unless Shared is the embedded FerretDB on PostgreSQL
// (DSYNC_MONGOTEST_BACKEND=postgresql). FerretDB 1.24 reads a database's
// collections when it first uses that database: one made afterwards
// through another front end does not exist for this one.
func StartFrontEnd(tb testing.TB) string {
	tb.Helper()
	srv := Shared(tb)
	if srv.pgURL == "" {
		tb.Skipf("mongotest: StartFrontEnd needs the embedded FerretDB on PostgreSQL (%s=%s); the server is %s %s", envBackend, BackendPostgreSQL, srv.kind, srv.backend)
	}
	base := tb.TempDir()
	c, err := startChild(filepath.Join(base, "data"), "127.0.0.1:0", srv.pgURL, filepath.Join(base, "stderr.log"))
	if err != nil {
		tb.Fatalf("mongotest: StartFrontEnd: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.stop(15 * time.Second); err != nil {
			tb.Logf("mongotest: StartFrontEnd: %v", err)
		}
	})
	if err := pingURI(c.uri, 30*time.Second); err != nil {
		tb.Fatalf("mongotest: StartFrontEnd: FerretDB at %s does not answer: %v; stderr:\n%s", c.uri, err, c.stderr())
	}
	return c.uri
}
