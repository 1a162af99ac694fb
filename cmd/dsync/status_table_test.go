//go:build unix

package main

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/statuspage"
)

// The lock table is printed a page of pageLines lines at a time, each
// page's columns as wide as its cells and the pages' before; a page whose
// first line waited pageWait is printed at the next line.
func TestLockTablePages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		sink := newTableSink(&out, "", "db.coll", selection{})
		free := func(name string) statuspage.LockState {
			return statuspage.LockState{Key: name, Kind: statuspage.KindMutex, Name: name}
		}
		for i := range pageLines - 1 {
			if err := sink.Lock(free(fmt.Sprintf("k%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if out.Len() != 0 {
			t.Fatalf("printed before a page was full:\n%s", out.String())
		}
		// The page's last line: the page is printed, header first, its
		// columns as wide as its cells.
		if err := sink.Lock(free("k99")); err != nil {
			t.Fatal(err)
		}
		lines := readLines(out.String())
		if len(lines) != pageLines+1 || !strings.HasPrefix(lines[0], "NAME  KIND   STATE") || lines[1] != "k0    mutex  free       -  -       -        -         -           -        -" {
			t.Fatalf("the first page (%d lines):\n%s", len(lines), out.String())
		}
		// A wider name on the next page widens the column from there on;
		// a line that waited pageWait is printed at the next one.
		if err := sink.Lock(free("a-longer-name")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pageWait)
		if err := sink.Lock(free("k100")); err != nil {
			t.Fatal(err)
		}
		lines = readLines(out.String())
		if len(lines) != pageLines+3 || lines[pageLines+1] != "a-longer-name  mutex  free       -  -       -        -         -           -        -" ||
			!strings.HasPrefix(lines[pageLines+2], "k100           mutex") {
			t.Fatalf("after a line that waited %v:\n%s", pageWait, out.String())
		}
	})
}

// TestExpiresInCell: a holder's EXPIRES IN is the time left, and
// "expired" once its session's expiry has passed (a holder within its
// outage grace, not proven gone), never "0s".
func TestExpiresInCell(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(1500 * time.Millisecond), "1.5s"},
		{now, "expired"},
		{now.Add(-12 * time.Second), "expired"},
	} {
		if got := expiresIn(c.at, now); got != c.want {
			t.Errorf("expiresIn(now%+v) = %q; want %q", c.at.Sub(now), got, c.want)
		}
	}
	var out strings.Builder
	sink := newTableSink(&out, "", "db.coll", selection{})
	held := statuspage.LockState{Key: "jobs", Kind: statuspage.KindMutex, Name: "jobs", Now: now,
		Holders: []statuspage.ClaimInfo{{Key: "jobs", Token: 7, Host: "h", PID: 9, QueuedAt: now.Add(-time.Minute), ExpiresAt: now.Add(-3 * time.Second), Holds: true}}}
	if err := sink.Lock(held); err != nil {
		t.Fatal(err)
	}
	if err := sink.done(statusSummary{now: now}); err != nil {
		t.Fatal(err)
	}
	if lines := readLines(out.String()); len(lines) < 2 || !strings.Contains(lines[1], "  expired  ") {
		t.Errorf("a holder past its expiry printed\n%s\nwant its EXPIRES IN \"expired\"", out.String())
	}
}
