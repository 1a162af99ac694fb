//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// What dsync lock -n and dsync once made is listed under the name they
// were given, with its kind, and found by that name: a Once that ran to
// success is done, one whose command failed is not. The table's columns
// line up whatever the width of the tokens and of the names' characters.
func TestStatusShowsNamesAndKinds(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dsync := func(args ...string) outcome {
		t.Helper()
		return runDsync(t, e, "", slow(30*time.Second), append([]string{"--db", db}, args...)...)
	}
	if r := dsync("once", "migrate-42", "--", "true"); r.code != 0 {
		t.Fatalf("dsync once migrate-42 -- true: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if r := dsync("once", "failing", "--", "false"); r.code != 1 {
		t.Fatalf("dsync once failing -- false: exit %d, want 1\nstderr: %s", r.code, r.stderr)
	}
	if r := dsync("lock", "migrate-42", "--", "true"); r.code != 0 {
		t.Fatalf("dsync lock migrate-42 -- true: exit %d\nstderr: %s", r.code, r.stderr)
	}
	// A unit of the semaphore encode held, and under it the lock 名前-ключ
	// (wide and multibyte characters), and under both: status, once it
	// lists them and the three above.
	script := untilListed(`"$0" --db "$1"`, "dsync:sem/encode", "名前-ключ", "dsync:once/migrate-42", "dsync:once/failing", "migrate-42") +
		`; "$0" --db "$1" status; echo "#"; "$0" --db "$1" status --json encode`
	r := runDsync(t, e, "", slow(2*time.Minute), "--db", db, "lock", "-n", "3", "encode", "--",
		dsyncBin, "--db", db, "lock", "名前-ключ", "--", "sh", "-c", script, dsyncBin, db)
	if r.code != 0 {
		t.Fatalf("status under encode and 名前-ключ: exit %d\nstderr: %s", r.code, r.stderr)
	}
	table, named, ok := strings.Cut(r.stdout, "#\n")
	if !ok {
		t.Fatalf("no separator in\n%s", r.stdout)
	}
	rows := map[string]string{}
	for _, l := range readLines(table) {
		if f := strings.Fields(l); len(f) > 3 {
			rows[f[0]+" "+f[1]] = f[2]
		}
	}
	for row, state := range map[string]string{"encode semaphore": "1/3", "migrate-42 once": "done", "failing once": "free", "migrate-42 mutex": "free", "名前-ключ mutex": "held"} {
		if rows[row] != state {
			t.Errorf("status: the row %q has state %q, want %q:\n%s", row, rows[row], state, table)
		}
	}
	checkAligned(t, table)

	st := parseStatusJSON(t, named)
	if len(st.locks) != 1 || st.locks[0].Name != "encode" || st.locks[0].Kind != "semaphore" || st.locks[0].Key != "dsync:sem/encode" || st.locks[0].State != "1/3" {
		t.Errorf("status --json encode, one unit held:\n%s\nwant the semaphore encode (key dsync:sem/encode), 1/3 held", named)
	}
	r = dsync("status", "--json", "migrate-42")
	st = parseStatusJSON(t, r.stdout)
	kinds := map[string]statuspage.Lock{}
	for _, l := range st.locks {
		kinds[l.Kind] = l
	}
	if len(st.locks) != 2 || kinds["mutex"].Key != "migrate-42" || kinds["mutex"].State != "free" ||
		kinds["once"].Key != "dsync:once/migrate-42" || kinds["once"].Name != "migrate-42" || kinds["once"].State != "done" {
		t.Errorf("status --json migrate-42: exit %d\n%s\nwant the mutex migrate-42, free, and the once migrate-42, done\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = dsync("status", "failing")
	if row := fields(t, r.stdout, "failing"); r.code != 0 || strings.Join(row, " ") != "failing once free - - - - - - -" {
		t.Errorf("status failing (a once whose command failed): exit %d\n%s\nwant it free, not done", r.code, r.stdout)
	}
}

// checkAligned checks that the lines of the lock table at the start of
// table (after the line that names the database, up to a blank line)
// line up under its header, in terminal columns: the TOKEN and WAITING
// cells end, and the HOST cells begin, where their headers do.
func checkAligned(t *testing.T, table string) {
	t.Helper()
	lines := readLines(table)
	if len(lines) > 0 && strings.HasPrefix(lines[0], "database ") {
		lines = lines[1:]
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "NAME ") {
		t.Fatalf("no lock table in\n%s", table)
	}
	header := fieldSpans(lines[0]) // NAME KIND STATE TOKEN HOST PID CMD PID HELD FOR EXPIRES IN WAITING
	if len(header) != 13 {
		t.Fatalf("header %q: %d fields, want 13", lines[0], len(header))
	}
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		row := fieldSpans(l)
		if len(row) != 10 {
			t.Errorf("row %q: %d fields, want 10", l, len(row))
			continue
		}
		if row[3][1] != header[3][1] || row[4][0] != header[4][0] || row[9][1] != header[12][1] {
			t.Errorf("a row out of line with the header (TOKEN ends at column %d, want %d; HOST begins at %d, want %d; WAITING ends at %d, want %d):\n%s\n%s",
				row[3][1], header[3][1], row[4][0], header[4][0], row[9][1], header[12][1], lines[0], l)
		}
	}
}

// fieldSpans returns where each of line's blank-separated fields begins
// and ends, in terminal columns.
func fieldSpans(line string) [][2]int {
	var spans [][2]int
	col, start := 0, -1
	for _, r := range line + " " {
		if r == ' ' {
			if start >= 0 {
				spans = append(spans, [2]int{start, col})
				start = -1
			}
		} else if start < 0 {
			start = col
		}
		col += runeWidth(r)
	}
	return spans
}

// Terminal columns: East Asian wide characters take two, combining marks
// none; a cell cut short keeps within its width.
func TestDisplayWidth(t *testing.T) {
	for s, want := range map[string]int{"abc": 3, "名前": 4, "ключ": 4, "e\u0301": 1, "ｈ": 2, "": 0} {
		if got := displayWidth(s); got != want {
			t.Errorf("displayWidth(%q) = %d, want %d", s, got, want)
		}
	}
	for _, tc := range []struct {
		s    string
		w    int
		want string
	}{{"名前名前", 5, "名前…"}, {"名前名前", 6, "名前…"}, {"名前名前", 8, "名前名前"}, {"abcdef", 4, "abc…"}} {
		if got, cut := cutToWidth(tc.s, tc.w); got != tc.want || cut != (got != tc.s) || displayWidth(got) > tc.w {
			t.Errorf("cutToWidth(%q, %d) = %q, %v; want %q", tc.s, tc.w, got, cut, tc.want)
		}
	}
}
