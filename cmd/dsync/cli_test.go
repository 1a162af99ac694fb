//go:build unix

package main

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	noServer := env("")
	for _, tc := range []struct {
		args []string
		want string // in the one line on stderr
	}{
		{[]string{"lock", "--bogus", "x", "--", "true"}, "unknown flag --bogus (see 'dsync help lock')"},
		{[]string{"--bogus", "status"}, "unknown flag --bogus (see 'dsync -h')"},
		{[]string{"status", "-bogus"}, "unknown flag -bogus"},
		{[]string{"lock", "--ttl", "soon", "x", "--", "true"}, `invalid value "soon" for --ttl`},
		{[]string{"lock", "x", "--ttl"}, "flag --ttl needs a value"},
		{[]string{"lock", "--ttl", "-1s", "x", "--", "true"}, "TTL must be positive"},
		{[]string{"lock"}, "missing lock NAME"},
		{[]string{"lock", "--"}, "missing lock NAME"},
		{[]string{"elect", "x", "--listen", "--", "true"}, "--listen runs no command"},
		{[]string{"status", "a", "b"}, `unexpected argument "b"`},
		{[]string{"status", ""}, "empty name"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate" (see 'dsync -h')`},
		{[]string{"completion"}, "name one shell"},
		{[]string{"version", "x"}, `unexpected argument "x"`},
		// Names: a lock's up to dsyncmongo.MaxKeyLen bytes, an election's
		// shorter by "dsync:election/", the namespace of its lease, which
		// no lock name may enter.
		{[]string{"lock", strings.Repeat("n", maxLockName+1), "--", "true"}, "name of 513 bytes; the limit is 512"},
		{[]string{"elect", strings.Repeat("n", maxElectionName+1), "--", "true"}, "name of 498 bytes; the limit is 497"},
		{[]string{"lock", "dsync:election/x", "--", "true"}, `beginning with "dsync:" are reserved`},
		{[]string{"lock", strings.Repeat("n", maxLockName), "--", "true"}, "dsync server"},
		{[]string{"lock", "x", "--", "true"}, "dsync server"},
		{[]string{"lock", "x"}, "dsync server"},
		{[]string{"lock", "--", "-x"}, "dsync server"},
		{[]string{"status"}, "dsync server"},
		{[]string{"clock"}, "dsync server"},
		{[]string{"elect", "x", "--", "true"}, "dsync server"},
		{[]string{"elect", "x", "--listen"}, "dsync server"},
		{[]string{"partition", "x", "--", "true"}, "--shards must be at least 1, got 0"},
		{[]string{"partition", "--shards", "4", "x"}, "missing the command to run for each shard"},
		{[]string{"partition", "--shards", "4"}, "missing partition NAME"},
		{[]string{"partition", "--shards", "2", "--weight", "0", "x", "--", "true"}, "--weight must be positive"},
		// The last shard's election, "NAME#1", must fit.
		{[]string{"partition", "--shards", "2", strings.Repeat("n", maxElectionName-1), "--", "true"}, `NAME with its last shard's "#1": name of 498 bytes; the limit is 497`},
		{[]string{"partition", "--shards", "2", strings.Repeat("n", maxElectionName-2), "--", "true"}, "dsync server"},
	} {
		r := runDsync(t, noServer, "", slow(10*time.Second), tc.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, ": dsync: ") {
			t.Errorf("dsync %s: exit %d, stderr %q; want exit %d and one line with %q, the prefix once",
				strings.Join(tc.args, " "), r.code, r.stderr, exitUsage, tc.want)
		}
	}
	for _, args := range [][]string{{"-h"}, {"help"}, {"help", "lock"}, {"lock", "-h"}, {"status", "--help"}, {"help", "help"}, {"help", "completion"}} {
		r := runDsync(t, noServer, "", slow(10*time.Second), args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage") && !strings.Contains(r.stdout, "\nUsage") {
			t.Errorf("dsync %s: exit %d, stdout %q; want usage and exit 0", strings.Join(args, " "), r.code, r.stdout)
		}
	}
	// A command's help, however it is asked for.
	for _, tc := range []struct{ args []string }{{[]string{"--help", "lock"}}, {[]string{"-h", "once"}}, {[]string{"help", "lock"}}, {[]string{"once", "--help"}}} {
		cmd := tc.args[0]
		if strings.HasPrefix(cmd, "-") || cmd == "help" {
			cmd = tc.args[1]
		}
		r := runDsync(t, noServer, "", slow(10*time.Second), tc.args...)
		if want := "Usage: dsync " + cmd; r.code != 0 || !strings.HasPrefix(r.stdout, want) {
			t.Errorf("dsync %s: exit %d, stdout %q; want it to begin with %q", strings.Join(tc.args, " "), r.code, r.stdout, want)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := runDsync(t, noServer, "", slow(10*time.Second), args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "dsync ") || !strings.Contains(r.stdout, "FerretDB") {
			t.Errorf("dsync %s: exit %d, stdout %q", args[0], r.code, r.stdout)
		}
	}
}

// Names that start with '-' are given after "--".
func TestNamesStartingWithADash(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	for _, tc := range []struct {
		args []string
		want string // on stdout
	}{
		{[]string{"lock", "--", "-x", "--", "sh", "-c", `echo "$DSYNC_LOCK"`}, "-x\n"},
		{[]string{"lock", "--", "-y", "sh", "-c", `echo "$DSYNC_LOCK"`}, "-y\n"},
		{[]string{"lock", "--ttl", "5s", "--", "--", "--", "sh", "-c", `echo "$DSYNC_LOCK"`}, "--\n"},
		{[]string{"lock", "plain", "--ttl", "5s", "sh", "-c", `echo "$DSYNC_LOCK $1"`, "sh", "--", "x"}, "plain --\n"},
	} {
		r := runDsync(t, e, "", slow(30*time.Second), append([]string{"--db", db}, tc.args...)...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("dsync %s: exit %d, stdout %q, want %q\nstderr: %s", strings.Join(tc.args, " "), r.code, r.stdout, tc.want, r.stderr)
		}
	}
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json", "--", "-x")
	if r.code != 0 || !strings.Contains(r.stdout, `"name":"-x"`) {
		t.Errorf("dsync status -- -x: exit %d, stdout %q\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// A server that cannot be reached is reported at once with the cause,
// not after --timeout: refused, unknown host, wrong credentials.
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	const timeout = time.Minute // never waited out: longer than slow(5s)
	withCredentials := strings.Replace(mongotest.Shared(t).URI(), "://", "://alice:secret@", 1)
	var wg sync.WaitGroup
	for _, tc := range []struct {
		uri, want string
	}{
		{"mongodb://127.0.0.1:1/", "cannot reach mongodb://127.0.0.1:1/: connection refused by 127.0.0.1:1"},
		{"mongodb://nosuchhost.invalid:27017/", `cannot reach mongodb://nosuchhost.invalid:27017/: no such host "nosuchhost.invalid"`},
		{"mongodb://nosuchhost.invalid,127.0.0.1:1/?replicaSet=rs", `no such host "nosuchhost.invalid"`},
		{withCredentials, "authentication failed at " + redact(withCredentials) + " as alice"},
	} {
		for _, args := range [][]string{
			{"lock", "x", "--", "true"},
			{"elect", "x", "--", "true"},
			{"status"},
			{"clock"},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := runDsync(t, env(tc.uri), "", 2*timeout, append([]string{"--timeout", timeout.String()}, args...)...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code == 0 || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) {
					t.Errorf("dsync %s with %s: exit %d, stderr %q; want non-zero and one line with %q",
						strings.Join(args, " "), tc.uri, r.code, r.stderr, tc.want)
				}
				if strings.Count(r.stderr, "connection refused") > 1 || strings.Count(r.stderr, "no such host") > 1 {
					t.Errorf("dsync %s with %s: stderr %q repeats itself", strings.Join(args, " "), tc.uri, r.stderr)
				}
				if r.took > slow(5*time.Second) {
					t.Errorf("dsync %s with %s took %v; want it to fail at once", strings.Join(args, " "), tc.uri, r.took)
				}
			}()
		}
	}
	wg.Wait()
}

// readLines returns the non-empty lines of s.
func readLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// fields returns the whitespace-separated fields of the line of s that
// starts with prefix.
func fields(t *testing.T, s, prefix string) []string {
	t.Helper()
	for _, l := range readLines(s) {
		if strings.HasPrefix(l, prefix) {
			return strings.Fields(l)
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, s)
	return nil
}
