package mongotest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// serverBinary is the executable the FerretDB child runs. Normally that is
// the test binary itself, re-executed in child-serve mode. Under -race the
// test binary's copy of FerretDB is instrumented and runs 10–25× slower,
// which turns timing-sensitive tests into tests of the race detector; so a
// race-enabled test binary builds ferretserver without -race once (the go
// build cache makes that a link step after the first time) and runs it.
// If that build fails, the test binary is used after all.
var serverBinary = sync.OnceValue(func() string {
	self, err := os.Executable()
	if !raceEnabled {
		if err != nil {
			return os.Args[0]
		}
		return self
	}
	dir, derr := os.MkdirTemp("", "dsync-mongotest-bin-")
	if derr == nil {
		out := filepath.Join(dir, "ferretserver")
		cmd := exec.Command(goTool(), "build", "-o", out, "github.com/go-dsync/dsync/internal/mongotest/ferretserver")
		if msg, berr := cmd.CombinedOutput(); berr == nil {
			serverBinaryDir = dir
			return out
		} else {
			fmt.Fprintf(os.Stderr, "mongotest: building a FerretDB server without -race failed (%v): %s; using the race-enabled test binary\n", berr, msg)
		}
		os.RemoveAll(dir)
	}
	if err != nil {
		return os.Args[0]
	}
	return self
})

// serverBinaryDir holds the binary serverBinary built, removed by Run.
var serverBinaryDir string

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
