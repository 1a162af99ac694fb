//go:build unix

package main

import (
	"strings"
	"testing"
	"time"
)

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 10 s")
	}
	t.Parallel()
	// A TTL above the demo's default: a busy machine, and the race
	// detector more so, slow the embedded server's SQLite many-fold, and
	// a holder that misses its renewals loses its hold.
	args := []string{"demo", "--ttl", "4s"}
	if raceEnabled {
		args[2] = "8s"
	}
	r := runDsync(t, env(""), "", slow(2*time.Minute), args...)
	if r.code != 0 {
		t.Fatalf("dsync demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"SIGKILL", "failover", "handoff", "summary", "never two holders at once"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.stderr != "" {
		t.Errorf("the demo wrote to stderr:\n%s", r.stderr)
	}
	t.Logf("dsync demo took %v:\n%s", r.took.Round(time.Millisecond), r.stdout)
}
