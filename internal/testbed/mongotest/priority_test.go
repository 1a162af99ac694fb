//go:build linux

package mongotest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Where the harness may raise a priority (as root), every thread of the
// embedded server runs at serverNice; elsewhere the test is skipped, as
// the server then runs at the default priority.
func TestServerRunsAtRaisedPriority(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the server runs at the default priority")
	}
	p := StartProcess(t)
	want, _ := strconv.Atoi(serverNice)
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", p.Pid()))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads of the server (pid %d): %v", p.Pid(), err)
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Fields after the command's closing parenthesis: state is
		// the 3rd field of the line, nice the 19th.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if nice, _ := strconv.Atoi(fields[16]); nice != want {
			t.Errorf("thread %s of the server runs at nice %d, want %d", f, nice, want)
		}
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.Pid())); !strings.HasPrefix(string(comm), "ferretserver") {
		t.Errorf("the server's process is %q, want the ferretserver (nice execs it in its place)", comm)
	}
}
