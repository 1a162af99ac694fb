//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/mongotest"
)

func TestStatusShowsLocksAndElections(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)

	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "no locks") {
		t.Errorf("status of an empty database: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// The command run under the lock (or as leader) is dsync status.
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "lock", "nightly", "--", dsyncBin, "--db", db, "status", "nightly")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	header := fields(t, r.stdout, "LOCK")
	row := fields(t, r.stdout, "nightly")
	if len(row) != 7 || row[1] != "held" || row[2] != "1" || strings.Join(header, " ") != "LOCK STATE TOKEN HOLDER PID HELD FOR EXPIRES IN" {
		t.Errorf("status under the lock:\n%s\nwant nightly held with token 1", r.stdout)
	}

	// The member's status document is written in the background: wait
	// for it.
	script := `for i in $(seq 50); do out=$("$0" --db "$1" status); case $out in *v9*) break;; esac; sleep 0.1; done; echo "$out"`
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "elect", "--version", "v9", "cron", "--", "sh", "-c", script, dsyncBin, db)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	row = fields(t, r.stdout, "cron")
	if len(row) < 7 || row[1] != "leader" || row[2] != "1" || !strings.Contains(r.stdout, "v9") {
		t.Errorf("status under the election:\n%s\nwant cron's leader with term 1 and version v9", r.stdout)
	}
	if row := fields(t, r.stdout, "nightly"); row[1] != "free" {
		t.Errorf("status after the lock was released:\n%s\nwant nightly free", r.stdout)
	}

	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "nothing-by-this-name")
	if r.code != exitFailure || len(readLines(r.stderr)) != 1 {
		t.Errorf("status of an unknown name: exit %d, stderr %q; want %d and one line", r.code, r.stderr, exitFailure)
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	r := runDsync(t, e, "", slow(30*time.Second), "clock")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "offset") || !strings.Contains(r.stdout, "ok") {
		t.Errorf("dsync clock: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := runDsync(t, e, "", 10*time.Second, "clock", "--max", "-1s"); r.code != exitUsage {
		t.Errorf("dsync clock --max -1s: exit %d, want %d", r.code, exitUsage)
	}
}
