//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/statuspage"
)

// TestPrintOutages: the table's outages ridden through come as given
// (newest first), each with when its session was suspended, for how
// long, the holds it kept, and its process.
func TestPrintOutages(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	err := printOutages(&out, []statuspage.Outage{
		{Session: "s2", Host: "h2", PID: 22, Suspended: at, Resumed: at.Add(11500 * time.Millisecond), Holds: 3, At: at.Add(12 * time.Second)},
		{Session: "s1", Host: "h1", PID: 11, Suspended: at.Add(-time.Hour), Resumed: at.Add(-time.Hour + 9*time.Second), Holds: 1, At: at.Add(-time.Hour + 9*time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `
outages ridden through (last day):
  suspended at 2026-11-28T12:00:00Z for 11.5s, 3 holds kept  h2 pid 22  (session s2)
  suspended at 2026-11-28T11:00:00Z for 9s, 1 hold kept  h1 pid 11  (session s1)
`
	if out.String() != want {
		t.Errorf("printOutages printed\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := printOutages(&out, nil); err != nil || out.Len() != 0 {
		t.Errorf("printOutages of none printed %q, %v; want nothing", out.String(), err)
	}
}

// TestStatusShowsOutages, on the real server: dsync status lists the
// outage records of the last day under "outages ridden through (last
// day):", newest first, and not an older one; --json prints them as
// outage records.
func TestStatusShowsOutages(t *testing.T) {
	t.Parallel()
	e, db, st, ctx := recordsStore(t)
	now := st.ServerTime().Latest.Truncate(time.Millisecond)
	for i, ago := range []time.Duration{2 * time.Hour, time.Minute, 25 * time.Hour} {
		o := driver.Outage{Session: "s" + string(rune('1'+i)), Host: "h", PID: 11 * (i + 1), Suspended: now.Add(-ago - 12*time.Second),
			Resumed: now.Add(-ago), Holds: i + 1, At: now.Add(-ago)}
		if err := st.Roles().Outages.RecordOutage(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if r.code != 0 {
		t.Fatalf("dsync status: exit %d\nstderr: %s", r.code, r.stderr)
	}
	_, table, ok := strings.Cut(r.stdout, "\noutages ridden through (last day):\n")
	lines := readLines(table)
	if !ok || len(lines) != 2 ||
		!strings.Contains(lines[0], " for 12s, 2 holds kept  h pid 22  (session s2)") ||
		!strings.Contains(lines[1], " for 12s, 1 hold kept  h pid 11  (session s1)") {
		t.Errorf("dsync status does not show the two outages of the last day, newest first:\n%s", r.stdout)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	got := parseStatusJSON(t, r.stdout).outages
	if len(got) != 2 || got[0].Session != "s2" || got[0].Holds != 2 || !got[0].At.Equal(now.Add(-time.Minute)) || got[1].Session != "s1" {
		t.Errorf("dsync status --json does not show the outages, newest first:\n%s", r.stdout)
	}
}
