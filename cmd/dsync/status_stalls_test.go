//go:build unix

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestPrintStalls: the table's stall records come newest first, each
// with its name and kind, token, holder and times ("?" where the holder
// gave none), and a stall of the last hour before the read is marked.
func TestPrintStalls(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	err := printStalls(&out, []statuspage.Stall{
		{Key: "jobs", Token: 4, Owner: "o1", Session: "s1", Host: "h1", PID: 11, At: now.Add(-2 * time.Hour)},
		{Key: "dsync:sem/encode", Token: 9, Owner: "o2", Session: "s2", Host: "h2", PID: 22,
			Since: now.Add(-11 * time.Minute), LastProgress: now.Add(-10 * time.Minute), At: now.Add(-5 * time.Minute)},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := `
stalled holds:
  encode (semaphore)  token 9  h2 pid 22  stalled at 2026-11-28T11:55:00Z, last progress 2026-11-28T11:50:00Z, held since 2026-11-28T11:49:00Z  (owner o2, session s2)  (last hour)
  jobs (mutex)  token 4  h1 pid 11  stalled at 2026-11-28T10:00:00Z, last progress ?, held since ?  (owner o1, session s1)
`
	if out.String() != want {
		t.Errorf("printStalls printed\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := printStalls(&out, nil, now); err != nil || out.Len() != 0 {
		t.Errorf("printStalls of none printed %q, %v; want nothing", out.String(), err)
	}
}

// TestStatusShowsStalls, on the real server: dsync status lists the
// stall records the store keeps under "stalled holds:", the one of the
// last hour marked, and --json prints them as stall records, newest
// first.
func TestStatusShowsStalls(t *testing.T) {
	t.Parallel()
	e, db, st, ctx := recordsStore(t)
	now := st.ServerTime().Latest
	for _, s := range []driver.Stall{
		{Key: "dsync:sem/encode", Token: 9, Owner: "o2", Session: "s2", Nonce: "n2", Host: "h2", PID: 22,
			Since: now.Add(-time.Minute), LastProgress: now.Add(-30 * time.Second), At: now},
		{Key: "nightly", Token: 4, Owner: "o1", Session: "s1", Nonce: "n1", Host: "h1", PID: 11, At: now.Add(-2 * time.Hour)},
	} {
		if err := st.Roles().Stalls.RecordStall(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if r.code != 0 {
		t.Fatalf("dsync status: exit %d\nstderr: %s", r.code, r.stderr)
	}
	_, table, ok := strings.Cut(r.stdout, "\nstalled holds:\n")
	lines := readLines(table)
	if !ok || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "  encode (semaphore)  token 9  h2 pid 22  ") || !strings.HasSuffix(lines[0], "(last hour)") ||
		!strings.HasPrefix(lines[1], "  nightly (mutex)  token 4  h1 pid 11  ") || strings.HasSuffix(lines[1], "(last hour)") {
		t.Errorf("dsync status does not show the two stalls, the recent one marked:\n%s", r.stdout)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	ss := parseStatusJSON(t, r.stdout).stalls
	if len(ss) != 2 || ss[0].Name != "encode" || ss[0].Kind != "semaphore" || ss[0].Token != 9 || !ss[0].At.Equal(now.Truncate(time.Millisecond)) ||
		ss[1].Name != "nightly" || !ss[1].Since.IsZero() {
		t.Errorf("dsync status --json does not show the stalls, newest first:\n%s", r.stdout)
	}
}

// recordsStore is a store, prepared, on the shared test server, in a
// database of t's own (db), for a test that records what dsync status
// lists, the environment (e) that points dsync at it, and a context
// that ends with t, within a minute.
func recordsStore(t *testing.T) (e []string, db string, st *dsyncmongo.Store, ctx context.Context) {
	t.Helper()
	e, db = env(mongotest.Shared(t).URI()), mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(t.Context(), slow(time.Minute))
	t.Cleanup(cancel)
	st, err := dsyncmongo.NewStore(mongotest.NewClient(t, mongotest.Shared(t).URI()).Database(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	return e, db, st, ctx
}
