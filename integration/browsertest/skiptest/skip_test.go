// Package skiptest checks how the browser tests of the package above
// show a machine without chromium: go test says no test ran, rather than
// a plain "ok", unless DSYNC_BROWSERTEST_REQUIRED=1 makes them fail.
package skiptest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoChromiumShows runs go test on the browser tests with a PATH
// without chromium: it passes and shows "[no tests to run]" (it showed
// "ok", as if the page had been checked); with
// DSYNC_BROWSERTEST_REQUIRED=1 it fails, saying why.
func TestNoChromiumShows(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if gr := os.Getenv("GOROOT"); gr != "" {
		if _, serr := os.Stat(filepath.Join(gr, "bin", "go")); serr == nil {
			goTool, err = filepath.Join(gr, "bin", "go"), nil
		}
	}
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	path := pathWithout(t, "chromium", "chromium-browser", "google-chrome")
	run := func(required bool) (string, error) {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "DSYNC_BROWSERTEST_REQUIRED=") {
				env = append(env, kv)
			}
		}
		env = append(env, "PATH="+path)
		if required {
			env = append(env, "DSYNC_BROWSERTEST_REQUIRED=1")
		}
		cmd := exec.Command(goTool, "test", "-count=1", "github.com/go-dsync/dsync/integration/browsertest")
		cmd.Dir = ".."
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(false); err != nil || !strings.Contains(out, "ok") || !strings.Contains(out, "[no tests to run]") {
		t.Errorf("go test of the browser tests without chromium: %v\n%s\nwant ok, [no tests to run]", err, out)
	}
	out, err := run(true)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out, "FAIL") || !strings.Contains(out, "no chromium on PATH") {
		t.Errorf("go test of the browser tests without chromium, DSYNC_BROWSERTEST_REQUIRED=1: %v\n%s\nwant a failure saying there is no chromium", err, out)
	}
}

// pathWithout returns a PATH of one directory that holds a link to each
// program of $PATH but those named, so that they are not found.
func pathWithout(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || slices.Contains(names, name) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				continue // an earlier directory of PATH has it
			}
			abs, err := filepath.Abs(filepath.Join(d, name))
			if err != nil {
				continue
			}
			if err := os.Symlink(abs, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
