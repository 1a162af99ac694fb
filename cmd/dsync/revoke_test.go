//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/mongotest"
)

// TestRevokeEndsAHolder: dsync revoke --key on a lock held by dsync lock
// waits until the holder's lease expired in store time and exits 0; the
// holder loses its hold (exit 122) and logs who revoked it and why.
func TestRevokeEndsAHolder(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	dir := t.TempDir()
	cmd := dsyncCmd(ctx, e, "--db", db, "lock", "--ttl", "2s", "revoked", "--",
		"sh", "-c", `touch "$1/holding"; exec sleep 30`, "sh", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "holding"), slow(20*time.Second))
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--key", "revoked", "--reason", "stuck job")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked session") {
		t.Fatalf("dsync revoke: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitLost {
		t.Errorf("the holder after the revoke: %v; want exit %d\nstderr: %s", err, exitLost, stderr.String())
	}
	if !strings.Contains(stderr.String(), "revoked") || !strings.Contains(stderr.String(), "stuck job") {
		t.Errorf("the holder's log does not say who revoked it and why:\n%s", stderr.String())
	}
	st := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if !strings.Contains(st.stdout, "revoked sessions:") || !strings.Contains(st.stdout, "stuck job") {
		t.Errorf("dsync status does not show the revocation:\n%s", st.stdout)
	}
	st = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	if !strings.Contains(st.stdout, `"kind":"revocation"`) || !strings.Contains(st.stdout, `"reason":"stuck job"`) {
		t.Errorf("dsync status --json does not show the revocation:\n%s", st.stdout)
	}
	// A revoke by --process records when, in store time, as one by
	// --key does (it recorded the zero time: nothing had read the
	// store's clock yet).
	if r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--process", "c0ffeec0ffeec0ffeec0", "--reason", "by process"); r.code != 0 {
		t.Fatalf("dsync revoke --process: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	st = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if !strings.Contains(st.stdout, "by process") || strings.Contains(st.stdout, " at 0001-") {
		t.Errorf("dsync status after a revoke by --process, want it with its time:\n%s", st.stdout)
	}
	if r := runDsync(t, e, "", 10*time.Second, "--db", db, "revoke", "--reason", "x"); r.code != exitUsage {
		t.Errorf("dsync revoke without --key or --process: exit %d, want %d", r.code, exitUsage)
	}
}
