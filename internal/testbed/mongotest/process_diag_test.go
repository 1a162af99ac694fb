//go:build unix

package mongotest

import (
	"fmt"
	"os"
	"strings"
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
