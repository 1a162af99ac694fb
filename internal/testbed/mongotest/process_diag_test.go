//go:build unix

package mongotest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// logCatcher is a testing.TB whose Logf is kept, for a test of what
// StartProcess's cleanup logs.
type logCatcher struct {
	testing.TB
	logs []string
}

func (l *logCatcher) Logf(format string, args ...any) {
	l.logs = append(l.logs, fmt.Sprintf(format, args...))
}

// A failed test's server leaves its goroutines and its stderr in a file
// that outlives the test's temporary directory, and the log says where.
func TestKeepForDiagnosisKeepsTheGoroutines(t *testing.T) {
	p := StartProcess(t)
	lc := &logCatcher{TB: t}
	p.tb = lc
	p.keepForDiagnosis()
	if p.Running() {
		t.Fatal("the server still runs after keepForDiagnosis")
	}
	if len(lc.logs) != 1 {
		t.Fatalf("logged %q, want one line naming the kept file", lc.logs)
	}
	i := strings.Index(lc.logs[0], os.TempDir())
	if i < 0 {
		t.Fatalf("logged %q, naming no file in %s", lc.logs[0], os.TempDir())
	}
	kept := lc.logs[0][i:]
	t.Cleanup(func() { os.Remove(kept) })
	b, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "goroutine ") || !strings.Contains(string(b), "SIGQUIT") {
		t.Fatalf("the kept log has no goroutine dump:\n%s", b)
	}
}

// failedTB is a testing.TB whose test has failed, and which keeps the
// cleanups registered through it for the test to run.
type failedTB struct {
	logCatcher
	cleanups []func()
}

func (f *failedTB) Failed() bool      { return true }
func (f *failedTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// A test that fails while its server is paused leaves no stopped server
// behind: the cleanup resumes it, it writes its goroutines (which a
// stopped process would not) and exits, and is reaped.
func TestFailedTestLeavesNoPausedServer(t *testing.T) {
	tb := &failedTB{logCatcher: logCatcher{TB: t}}
	p := StartProcess(tb)
	pid := p.Pid()
	p.Pause()
	for i := len(tb.cleanups) - 1; i >= 0; i-- {
		tb.cleanups[i]()
	}
	if p.Running() || p.Paused() {
		t.Fatalf("after the cleanup: running %v, paused %v", p.Running(), p.Paused())
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the server (pid %d) is still there after the cleanup: kill 0: %v", pid, err)
	}
	var kept string
	for _, l := range tb.logs {
		if i := strings.Index(l, os.TempDir()); i >= 0 {
			kept = l[i:]
		}
	}
	if kept == "" {
		t.Fatalf("logged %q, naming no kept file", tb.logs)
	}
	t.Cleanup(func() { os.Remove(kept) })
	b, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "goroutine ") {
		t.Fatalf("the kept log has no goroutine dump: the paused server was not resumed before its SIGQUIT:\n%s", b)
	}
}
