package mongotest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

// serverModule is a module of this repository holding a server command
// the harness runs as a child process. The library module must not
// require what those servers link in (FerretDB, dockertest), so the
// harness does not link them: it builds the command with `go build` and
// runs it.
type serverModule struct {
	what   string // for messages: "the embedded FerretDB server"
	module string // module path
	dir    string // its directory, relative to the repository's root
	cmd    string // the command's package, relative to dir
	envBin string // names a ready-built binary to use instead
}

// envServerBin names a ready-built ferretserver binary to use instead of
// building one.
const envServerBin = "DSYNC_MONGOTEST_FERRETSERVER"

// ferretModule is the module holding the embedded server.
const ferretModule = "github.com/go-dsync/dsync/internal/ferretserve"

var ferretServer = serverModule{
	what:   "the embedded FerretDB server",
	module: ferretModule,
	dir:    filepath.Join("internal", "ferretserve"),
	cmd:    "ferretserver",
	envBin: envServerBin,
}

// serverBinary returns the ferretserver executable the FerretDB children
// run (see [serverModule.binary]).
var serverBinary = ferretServer.binary()

// binary returns a function that returns the command's executable:
// $envBin if set (read at each call), else a binary built from this
// repository once per test binary (without -race, whatever the tests were
// built with: a race-instrumented FerretDB runs 10–25× slower), into a
// directory shared by every test binary of the checkout (see [binDir]).
func (m serverModule) binary() func() (string, error) {
	build := sync.OnceValues(m.build)
	return func() (string, error) {
		if p := os.Getenv(m.envBin); p != "" {
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("%s: %w", m.envBin, err)
			}
			return p, nil
		}
		return build()
	}
}

// build builds the command into [binDir] of its source directory. go
// build leaves an output that is up to date with its sources as it is, so
// only the first test binary of a checkout (and the first after a change
// to the server's sources) links the server: a link of FerretDB costs
// seconds of CPU, and every package whose tests use a server paid it.
// The build lock keeps test binaries from building it at once; one that
// replaces the file while another runs it does not disturb that run (go
// build renames its output into place).
func (m serverModule) build() (string, error) {
	src, err := m.sourceDir()
	if err != nil {
		return "", fmt.Errorf("cannot build %s: %w; set MONGODB_URI, or set %s to a %s binary (built with go build ./cmd/%s in %s of a clone of github.com/go-dsync/dsync)", m.what, err, m.envBin, m.cmd, m.cmd, filepath.ToSlash(m.dir))
	}
	dir, err := binDir(src)
	if err != nil {
		return "", fmt.Errorf("cannot build %s: %w", m.what, err)
	}
	out := filepath.Join(dir, m.cmd)
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	start := time.Now()
	cmd := exec.Command(goTool(), "build", "-buildvcs=false", "-o", out, "./cmd/"+m.cmd)
	cmd.Dir = src
	// Its own module alone, with its own go.mod's versions; no -race or
	// -mod=vendor from the environment, and no VCS stamp (git may not be
	// usable on the checkout; nothing reads the stamp).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	unlock := lockBuild()
	msg, err := cmd.CombinedOutput()
	unlock()
	if err != nil {
		return "", fmt.Errorf("cannot build %s (go build in %s: %v):\n%s", m.what, src, err, bytes.TrimSpace(msg))
	}
	logf("%s: go build -o %s ./cmd/%s in %s took %v", m.what, out, m.cmd, src, time.Since(start).Round(time.Millisecond))
	built.Lock()
	built.outs = append(built.outs, out)
	built.Unlock()
	return out, nil
}

// built lists the binaries this test binary built (or found up to date),
// in order, for the harness's own tests.
var built struct {
	sync.Mutex
	outs []string
}

// binDir returns the directory, made if missing, that holds the server
// binaries built from the sources in src: one per checkout (a hash of its
// path names it), under the user's cache directory (else the temp
// directory), so that the test binaries of a checkout share one build
// and two checkouts never run each other's. It is a cache: deleting
// dsync-mongotest there is always safe.
func binDir(src string) (string, error) {
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + runtime.GOOS + "/" + runtime.GOARCH))
	dir := filepath.Join(root, "dsync-mongotest", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// sourceDir finds the module in the repository the tests run from: next
// to the go.work or the go.mod that `go env` reports for the current
// directory (a test runs in its package's directory), else next to this
// source file as it was compiled.
func (m serverModule) sourceDir() (string, error) {
	var roots []string
	for _, v := range []string{"GOWORK", "GOMOD"} {
		out, err := exec.Command(goTool(), "env", v).Output()
		if p := strings.TrimSpace(string(out)); err == nil && p != "" && p != "off" && p != os.DevNull {
			roots = append(roots, filepath.Dir(p))
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		roots = append(roots, filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	for _, root := range roots {
		dir := filepath.Join(root, m.dir)
		if modulePath(filepath.Join(dir, "go.mod")) == m.module {
			return dir, nil
		}
	}
	if len(roots) == 0 {
		return "", errors.New("cannot locate the repository: no go.work or go.mod around the current directory")
	}
	return "", fmt.Errorf("module %s not found under %s", m.module, strings.Join(roots, ", "))
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
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
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
