package mongotest

import (
	"os"
	"os/exec"
	"runtime"
)

// serverNice is the niceness the embedded FerretDB runs at where the
// harness may raise a process's priority (on Linux, as root).
//
// The embedded server stands for a store on a machine of its own, which
// a busy client machine does not slow. Sharing this machine's cores at
// the default priority, it gets no more CPU than any one CPU burner of
// the loaded stage (.ci/run, docs/contributing.md): beside eight of them
// on two cores, its requests queued on SQLite's write lock faster than
// it committed them, every client's requests timed out, and fault suites
// found no owner for a minute. At this niceness it is served first, and
// the clients, the tests and the burners share what is left: the load
// the suite must hold under stays on the clients' side, where the
// library runs.
const serverNice = "-10"

// withServerPriority returns the command that runs exe with args at
// serverNice: through nice(1), which execs exe in its place, so the
// process is exe's, and every thread it starts has that niceness. Where
// the harness may not raise a priority, or has no nice, it returns exe
// and args as they are: the server runs at the default priority.
func withServerPriority(exe string, args []string) (string, []string) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return exe, args
	}
	nice, err := exec.LookPath("nice")
	if err != nil {
		return exe, args
	}
	return nice, append([]string{"-n", serverNice, exe}, args...)
}
