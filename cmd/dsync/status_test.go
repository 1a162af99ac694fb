//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestStatusShowsLocksAndElections(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)

	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "no locks") {
		t.Errorf("status of an empty database: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// It only read: a mistyped --db is not left with dsync's collections.
	client := mongotest.NewClient(t, mongotest.Shared(t).URI())
	if names, err := client.Database(db).ListCollectionNames(context.Background(), bson.D{}); err != nil || len(names) != 0 {
		t.Errorf("after status of an empty database, its collections are %q (%v); want none", names, err)
	}

	// The command run under the lock (or as leader) is dsync status;
	// it prints the pid of the shell that runs it, the lock's command,
	// first.
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "lock", "nightly", "--",
		"sh", "-c", `echo "$$"; "$0" --db "$1" status nightly`, dsyncBin, db)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	host, _ := os.Hostname()
	cmdPID := readLines(r.stdout)[0]
	header := fields(t, r.stdout, "NAME")
	row := fields(t, r.stdout, "nightly")
	if want := "NAME KIND STATE TOKEN HOST PID CMD PID HELD FOR EXPIRES IN WAITING"; strings.Join(header, " ") != want {
		t.Errorf("status header %q, want %q", strings.Join(header, " "), want)
	}
	if len(row) != 10 || row[1] != "mutex" || row[2] != "held" || !positive(row[3]) || row[4] != fitCell(host, lockHostWidth) || row[5] == cmdPID || row[6] != cmdPID || row[9] != "0" {
		t.Errorf("status under the lock:\n%s\nwant nightly held with a token by %s, the command's pid %s, dsync's another, nobody waiting", r.stdout, host, cmdPID)
	}

	// The member's status document is written in the background: wait
	// for it.
	script := `echo "$$"; for i in $(seq 50); do out=$("$0" --db "$1" status); case $out in *v9*) break;; esac; sleep 0.1; done; echo "$out"`
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "elect", "--version", "v9", "cron", "--", "sh", "-c", script, dsyncBin, db)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	cmdPID = readLines(r.stdout)[0]
	row = fields(t, r.stdout, "cron")
	if len(row) < 8 || row[1] != "leader" || !positive(row[2]) || row[5] != cmdPID || row[6] != "v9" {
		t.Errorf("status under the election:\n%s\nwant cron's leader with a term, command pid %s and version v9", r.stdout, cmdPID)
	}
	if row := fields(t, r.stdout, "nightly"); strings.Join(row, " ") != "nightly mutex free - - - - - - -" {
		t.Errorf("status after the lock was released:\n%s\nwant nightly free, with no holder", r.stdout)
	}

	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "nothing-by-this-name")
	if r.code != exitFailure || len(readLines(r.stderr)) != 1 {
		t.Errorf("status of an unknown name: exit %d, stderr %q; want %d and one line", r.code, r.stderr, exitFailure)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "")
	if r.code != exitUsage || !strings.Contains(r.stderr, "empty name") {
		t.Errorf(`status "": exit %d, stderr %q; want %d: an empty name is no name`, r.code, r.stderr, exitUsage)
	}
}

// A plain lock and an election of the same name are apart: the lock
// "leader/coll" is not the lease of the election "coll", and status lists
// each as what it is.
func TestStatusPlainLockAndElectionAreApart(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	// As leader of coll, take the lock leader/coll without waiting, and
	// under both print status, all of it (once it lists both) and then
	// only the name coll.
	under := untilListed(`"$0" --db "$1"`, "leader/coll", "dsync:election/coll") +
		`; "$0" --db "$1" status --json; echo "#"; "$0" --db "$1" status --json coll`
	script := `"$0" --db "$1" lock --try leader/coll -- sh -c "$2" "$0" "$1"`
	r := runDsync(t, e, "", slow(2*time.Minute), "--db", db, "elect", "coll", "--", "sh", "-c", script, dsyncBin, db, under)
	if r.code != 0 {
		t.Fatalf("dsync lock --try leader/coll under the leadership of election coll: exit %d; want 0, the two apart\nstderr: %s", r.code, r.stderr)
	}
	all, named, ok := strings.Cut(r.stdout, "#\n")
	if !ok {
		t.Fatalf("no separator in\n%s", r.stdout)
	}
	st := parseStatusJSON(t, all)
	if len(st.locks) != 1 || st.locks[0].Name != "leader/coll" || st.locks[0].State != "held" || len(st.locks[0].Holders) != 1 || st.locks[0].Holders[0].Token == 0 {
		t.Errorf("status --json locks: %+v; want leader/coll alone, held with a token", st.locks)
	}
	if len(st.elections) != 1 || st.elections[0].Name != "coll" || st.elections[0].Key != "dsync:election/coll" || st.elections[0].Leader == nil ||
		st.elections[0].Leader.Term == 0 || st.elections[0].Leader.ExpiresInMS <= 0 || st.elections[0].Leader.CommandPID == 0 {
		t.Errorf("status --json elections: %+v; want coll alone, led in a term under a lease that has not expired", st.elections)
	}
	if st.summary.More || st.summary.Database != db {
		t.Errorf("status --json summary: %+v; want no more, of database %s", st.summary, db)
	}
	st = parseStatusJSON(t, named)
	if len(st.locks) != 0 || len(st.elections) != 1 || st.elections[0].Name != "coll" || st.elections[0].Leader == nil {
		t.Errorf("status --json coll: %+v; want the election coll, led, and no lock", st)
	}

	// The leases live in the lock collection, whatever --elections says:
	// that names where older releases kept them (see
	// TestElectRefusesToLeadBesideAnOlderRelease).
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "--elections", "other_elections", "elect", "moved", "--", "true")
	if r.code != 0 {
		t.Fatalf("dsync --elections other_elections elect moved: exit %d\nstderr: %s", r.code, r.stderr)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json", "moved")
	if st := parseStatusJSON(t, r.stdout); len(st.locks) != 0 || len(st.elections) != 1 || st.elections[0].Name != "moved" {
		t.Errorf("status --json moved, after an election with --elections: %+v; want the election moved in the lock collection\nstderr: %s", st, r.stderr)
	}
}

// Long names are cut short in the table, which stays narrow; --json has
// everything.
func TestStatusJSONAndLongNames(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	long := strings.Repeat("long-name-", maxLockName/10) // 510 bytes
	r := runDsync(t, e, "", slow(2*time.Minute), "--db", db, "lock", long, "--",
		"sh", "-c", `echo "$$"; `+untilListed(`"$0" --db "$1"`, long)+`; "$0" --db "$1" status; "$0" --db "$1" status --json`, dsyncBin, db)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	cmdPID, _ := strconv.Atoi(readLines(r.stdout)[0])
	table, js, ok := strings.Cut(r.stdout, "{")
	if !ok {
		t.Fatalf("no JSON in\n%s", r.stdout)
	}
	for _, l := range readLines(table) {
		if n := utf8.RuneCountInString(l); n > 140 {
			t.Errorf("a line of %d characters:\n%s", n, l)
		}
	}
	if !strings.Contains(table, fitCell(long, maxNameWidth)+" ") || !strings.Contains(table, "--json") {
		t.Errorf("the table should cut the name short and say where it is whole:\n%s", table)
	}
	st := parseStatusJSON(t, "{"+js)
	host, _ := os.Hostname()
	if len(st.locks) != 1 || st.locks[0].Name != long || st.locks[0].State != "held" || len(st.locks[0].Holders) != 1 ||
		st.locks[0].Holders[0].Token == 0 || st.locks[0].Holders[0].Host != host || st.locks[0].Holders[0].CommandPID != cmdPID ||
		st.locks[0].Holders[0].ExpiresInMS <= 0 || len(st.locks[0].Waiting) != 0 || st.summary.Now.IsZero() {
		t.Errorf("status --json: %+v; want the whole name held with a token by %s, command pid %d", st, host, cmdPID)
	}

	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	if st := parseStatusJSON(t, r.stdout); len(st.locks) != 1 || st.locks[0].Name != long ||
		st.locks[0].State != "free" || len(st.locks[0].Holders) != 0 || len(st.locks[0].Waiting) != 0 {
		t.Errorf("status --json after the release:\n%s\nwant the lock listed, free, with no holder", r.stdout)
	}
}

// A process waiting for a held lock is counted; once both are done the
// lock is free, and the waiter held it after the first, with the next
// token.
func TestStatusCountsWaiters(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	// The holder's command starts a second dsync lock on the same name in
	// the background (it waits), then reads status until it shows it.
	script := `"$0" --db "$1" lock queue -- sh -c 'echo "$DSYNC_TOKEN" >"$0.tmp" && mv "$0.tmp" "$0"' "$2/second" >/dev/null 2>&1 &
for i in $(seq 100); do out=$("$0" --db "$1" status --json queue); case $out in *'"waiting":[{'*) break;; esac; sleep 0.1; done
echo "$out"`
	r := runDsync(t, e, "", slow(60*time.Second), "--db", db, "lock", "queue", "--", "sh", "-c", script, dsyncBin, db, dir)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	st := parseStatusJSON(t, r.stdout)
	if len(st.locks) != 1 || st.locks[0].State != "held" || len(st.locks[0].Holders) != 1 || st.locks[0].Holders[0].Token == 0 || len(st.locks[0].Waiting) != 1 {
		t.Fatalf("status --json with one process waiting:\n%s\nwant queue held with a token, 1 waiting", r.stdout)
	}
	firstToken := st.locks[0].Holders[0].Token
	// The waiter takes the lock when the holder's command is done.
	waitFile(t, filepath.Join(dir, "second"), slow(30*time.Second))
	if b, err := os.ReadFile(filepath.Join(dir, "second")); err != nil || strings.TrimSpace(string(b)) != strconv.FormatUint(firstToken+1, 10) {
		t.Errorf("the waiter's token: %q (%v); want %d, the next after the first hold's", b, err, firstToken+1)
	}
	deadline := time.Now().Add(slow(30 * time.Second))
	for {
		r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json", "queue")
		st = parseStatusJSON(t, r.stdout)
		if len(st.locks) != 1 {
			t.Fatalf("status --json queue:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
		if l := st.locks[0]; l.State == "free" {
			if len(l.Holders) != 0 || len(l.Waiting) != 0 {
				t.Errorf("status --json after both holds:\n%s\nwant queue free, no holder, nobody waiting", r.stdout)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock is not free after both holds:\n%s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A holder killed with SIGKILL leaves its claim behind: once its session
// expires, status shows the lock free, with nobody holding it. The holder
// has no outage grace: with one, while no other process renews, nothing
// the store records would tell its death from an outage of the store
// until a renewal past its expiry + the grace.
func TestStatusAfterTheHolderDies(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	dir := t.TempDir()
	// The TTL is long enough that a busy machine's late renewals keep
	// the hold until the kill, short enough that the wait after it is.
	const ttl = 5 * time.Second
	cmd := dsyncCmd(ctx, e, "--db", db, "--outage-grace", "0", "lock", "--ttl", ttl.String(), "doomed", "--",
		"sh", "-c", `touch "$1/holding"; exec sleep 600`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "holding"), slow(20*time.Second))
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "doomed")
	if row := fields(t, r.stdout, "doomed"); len(row) != 10 || row[2] != "held" {
		t.Errorf("status while held:\n%s\nwant doomed held", r.stdout)
	}
	// Once free, the lock is found by its name in the directory, where
	// the holder records it in the background: it must have, before it
	// dies.
	waitListed(t, e, db, "doomed")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	for {
		r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "doomed")
		row := fields(t, r.stdout, "doomed")
		if row[2] != "held" {
			if strings.Join(row, " ") != "doomed mutex free - - - - - - -" {
				t.Errorf("status after the holder's session expired:\n%s\nwant doomed free, with no holder", r.stdout)
			}
			break
		}
		if time.Since(killed) > slow(4*ttl) {
			t.Fatalf("%v after SIGKILL of a holder with --ttl %v, status still shows it held:\n%s", time.Since(killed), ttl, r.stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A candidate killed with SIGKILL leaves its member document behind; it
// drops out of the list within the default --seen.
func TestStatusForgetsADeadCandidate(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	dir := t.TempDir()
	cmd := dsyncCmd(ctx, e, "--db", db, "elect", "--ttl", "3s", "--version", "doomed", "svc", "--",
		"sh", "-c", `touch "$1/leading"; exec sleep 600`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "leading"), slow(20*time.Second))
	// Once nobody leads, the election is found by its name in the
	// directory, where the candidate records it in the background: it
	// must have, before it dies.
	waitListed(t, e, db, "dsync:election/svc")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	for {
		r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json", "svc")
		st := parseStatusJSON(t, r.stdout)
		if len(st.elections) != 1 {
			t.Fatalf("status --json svc:\n%s\nstderr: %s", r.stdout, r.stderr)
		}
		if len(st.elections[0].Members) == 0 {
			break
		}
		if time.Since(killed) > defaultSeen+slow(5*time.Second) {
			t.Fatalf("%v after SIGKILL, status still lists %+v", time.Since(killed), st.elections[0].Members)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if took := time.Since(killed); took < time.Second {
		t.Errorf("the candidate was forgotten %v after SIGKILL; its last heartbeat cannot be that old yet", took)
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	r := runDsync(t, e, "", slow(30*time.Second), "clock")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "offset") || !strings.Contains(r.stdout, "ok") {
		t.Errorf("dsync clock: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := runDsync(t, e, "", slow(10*time.Second), "clock", "--max", "-1s"); r.code != exitUsage {
		t.Errorf("dsync clock --max -1s: exit %d, want %d", r.code, exitUsage)
	}
}

// positive reports whether cell is a token or term: a number above 0.
func positive(cell string) bool {
	n, err := strconv.ParseUint(cell, 10, 64)
	return err == nil && n > 0
}
