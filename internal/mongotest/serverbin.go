package mongotest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// envServerBin names a ready-built ferretserver binary to use instead of
// building one.
const envServerBin = "DSYNC_MONGOTEST_FERRETSERVER"

// ferretModule is the module holding the embedded server. The library
// module must not require FerretDB, so the harness does not link it in:
// it builds that module's cmd/ferretserver with `go build` and runs it.
const ferretModule = "github.com/go-dsync/dsync/internal/ferretserve"

// serverBinary returns the ferretserver executable the FerretDB children
// run: $DSYNC_MONGOTEST_FERRETSERVER if set, else a binary built once per
// test binary from internal/ferretserve in this repository (without -race,
// whatever the tests were built with: a race-instrumented FerretDB runs
// 10–25× slower). The go build cache makes every build after the first a
// link step. The binary goes to a temp dir that [Run] removes.
var serverBinary = sync.OnceValues(func() (string, error) {
	if p := os.Getenv(envServerBin); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", envServerBin, err)
		}
		return p, nil
	}
	src, err := ferretModuleDir()
	if err != nil {
		return "", fmt.Errorf("cannot build the embedded FerretDB server: %w; set MONGODB_URI, run a Docker engine, or set %s to a ferretserver binary (built with go build ./cmd/ferretserver in internal/ferretserve of a clone of github.com/go-dsync/dsync)", err, envServerBin)
	}
	dir, err := os.MkdirTemp("", "dsync-mongotest-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "ferretserver")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	start := time.Now()
	logf("building the embedded FerretDB server: go build -o %s ./cmd/ferretserver in %s", out, src)
	cmd := exec.Command(goTool(), "build", "-buildvcs=false", "-o", out, "./cmd/ferretserver")
	cmd.Dir = src
	// Its own module alone, with its own go.mod's versions; no -race or
	// -mod=vendor from the environment, and no VCS stamp (git may not be
	// usable on the checkout; nothing reads the stamp).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	unlock := lockBuild()
	msg, err := cmd.CombinedOutput()
	unlock()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("cannot build the embedded FerretDB server (go build in %s: %v):\n%s", src, err, bytes.TrimSpace(msg))
	}
	logf("built the embedded FerretDB server in %v", time.Since(start).Round(time.Millisecond))
	serverBinaryDir = dir
	return out, nil
})

// serverBinaryDir holds the binary serverBinary built, removed by Run.
var serverBinaryDir string

// ferretModuleDir finds internal/ferretserve in the repository the tests
// run from: next to the go.work or the go.mod that `go env` reports for
// the current directory (a test runs in its package's directory), else
// next to this source file as it was compiled.
func ferretModuleDir() (string, error) {
	var roots []string
	for _, v := range []string{"GOWORK", "GOMOD"} {
		out, err := exec.Command(goTool(), "env", v).Output()
		if p := strings.TrimSpace(string(out)); err == nil && p != "" && p != "off" && p != os.DevNull {
			roots = append(roots, filepath.Dir(p))
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		roots = append(roots, filepath.Join(filepath.Dir(file), "..", ".."))
	}
	for _, root := range roots {
		dir := filepath.Join(root, "internal", "ferretserve")
		if modulePath(filepath.Join(dir, "go.mod")) == ferretModule {
			return dir, nil
		}
	}
	if len(roots) == 0 {
		return "", errors.New("cannot locate the repository: no go.work or go.mod around the current directory")
	}
	return "", fmt.Errorf("module %s not found under %s", ferretModule, strings.Join(roots, ", "))
}

// modulePath returns the module path a go.mod declares, or "".
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
