package mongotest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// keepForDiagnosis runs at the cleanup of a failed test that started p:
// it has a running child write where each of its goroutines waits (the Go
// runtime's dump on SIGQUIT, on Unix), and copies the child's stderr log,
// that dump at its end, out of the test's temporary directory, which is
// removed, and logs where. A test that failed because the server stopped
// answering (every request timing out on a loaded machine) then leaves
// the evidence of where the server's work stood: requests waiting on
// SQLite's write lock, on the CPU, or on nothing. The child is gone
// afterwards; p.Stop finds nothing to stop.
func (p *Process) keepForDiagnosis() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil && p.c.logPath != "" {
		_ = sigCont(p.c.cmd.Process) // a paused child dumps nothing
		if sigQuit(p.c.cmd.Process) == nil {
			p.c.exitedWithin(10 * time.Second)
			p.c.stdin.Close()
		} else {
			p.c.kill()
		}
		p.c = nil
	}
	kept, err := copyLog(p.log, p.tb.Name())
	if err != nil {
		p.tb.Logf("mongotest: the server's stderr was not kept: %v", err)
		return
	}
	p.tb.Logf("mongotest: the server's stderr (its goroutines at the end, if it was running) kept in %s", kept)
}

var notInName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// copyLog copies the log at path to a new file in os.TempDir named after
// the test, and returns its path.
func copyLog(path, test string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.CreateTemp("", fmt.Sprintf("dsync-ferret-%s-*.log", notInName.ReplaceAllString(test, "_")))
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", err
	}
	return filepath.Clean(dst.Name()), dst.Close()
}
