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
