//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// statusJSON is what dsync status --json printed: its records, by
// kind, in the order printed, and its summary.
type statusJSON struct {
	locks       []statuspage.Lock
	elections   []statuspage.Election
	partitions  []statuspage.Partition
	revocations []statuspage.Revocation
	stalls      []statuspage.Stall
	setWaits    []statuspage.SetWait
	deadlocks   []statuspage.Deadlock
	outages     []statuspage.Outage
	names       []string // of the locks and elections, in the order printed
	summary     statuspage.Summary
}

// parseStatusJSON reads the NDJSON of status --json: each line one
// statuspage.Record, with one field set and none the schema lacks, and
// the summary last.
func parseStatusJSON(t *testing.T, out string) statusJSON {
	t.Helper()
	var st statusJSON
	lines := readLines(out)
	if len(lines) == 0 {
		t.Fatalf("status --json printed nothing")
	}
	for i, l := range lines {
		var rec statuspage.Record
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("status --json, line %d: %v\n%s", i+1, err, out)
		}
		set := 0
		for _, isSet := range []bool{rec.Lock != nil, rec.Election != nil, rec.Partition != nil, rec.Revocation != nil, rec.Stall != nil, rec.SetWait != nil, rec.Deadlock != nil, rec.Outage != nil, rec.Summary != nil} {
			if isSet {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("status --json, line %d is %d records; want one:\n%s", i+1, set, out)
		}
		switch {
		case rec.Lock != nil:
			st.locks, st.names = append(st.locks, *rec.Lock), append(st.names, rec.Lock.Name)
		case rec.Election != nil:
			st.elections, st.names = append(st.elections, *rec.Election), append(st.names, rec.Election.Name)
		case rec.Partition != nil:
			st.partitions = append(st.partitions, *rec.Partition)
		case rec.Revocation != nil:
			st.revocations = append(st.revocations, *rec.Revocation)
		case rec.Stall != nil:
			st.stalls = append(st.stalls, *rec.Stall)
		case rec.SetWait != nil:
			st.setWaits = append(st.setWaits, *rec.SetWait)
		case rec.Deadlock != nil:
			st.deadlocks = append(st.deadlocks, *rec.Deadlock)
		case rec.Outage != nil:
			st.outages = append(st.outages, *rec.Outage)
		default:
			st.summary = *rec.Summary
		}
		if last := i == len(lines)-1; (rec.Summary != nil) != last {
			t.Fatalf("status --json, line %d: want the summary last, and only there:\n%s", i+1, out)
		}
	}
	return st
}

// TestStatusPages: status lists the locks with a prefix a page at a
// time, in the server's order (bytes on MongoDB, first use on FerretDB),
// and says how to go on; --after continues where the order allows it and
// is refused where it does not; --json streams a line per lock and a
// summary.
func TestStatusPages(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	e := env(uri)
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()

	// 25 locks page/NN used in a shuffled order, and one other; page/07
	// is held while status runs.
	client := mongotest.NewClient(t, uri)
	store, err := dsyncmongo.NewStore(client.Database(db))
	if err != nil {
		t.Fatal(err)
	}
	b, err := dsync.NewClient(store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var used []string
	for _, i := range rand.Perm(25) {
		used = append(used, fmt.Sprintf("page/%02d", i))
	}
	used = append(used, "zz-other")
	for _, k := range used {
		m, err := dsync.NewMutex(b, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if k != "page/07" {
			m.Unlock()
		} else {
			defer m.Unlock()
		}
	}
	// The keys are recorded in the background: wait for them.
	for {
		n := 0
		for _, err := range statuspage.NewReader(b).List(ctx, statuspage.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == len(used) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	order, err := statuspage.NewReader(b).ListOrder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pages := slices.DeleteFunc(slices.Clone(used), func(k string) bool { return !strings.HasPrefix(k, "page/") })
	if order == statuspage.OrderBytes {
		slices.Sort(pages)
	}
	status := func(args ...string) outcome {
		t.Helper()
		return runDsync(t, e, "", slow(30*time.Second), append([]string{"--db", db, "status"}, args...)...)
	}

	// The first page of 10, as JSON lines.
	r := status("--json", "--prefix", "page/", "--limit", "10")
	st := parseStatusJSON(t, r.stdout)
	if r.code != 0 || !slices.Equal(st.names, pages[:10]) || len(st.elections) != 0 {
		t.Fatalf("status --json --prefix page/ --limit 10: exit %d, names %q; want %q (%v order)\nstderr: %s", r.code, st.names, pages[:10], order, r.stderr)
	}
	for _, l := range st.locks {
		if held := l.Name == "page/07"; held != (l.State == "held") || held != (len(l.Holders) == 1) {
			t.Errorf("lock %+v: want page/07 held, the others free", l)
		}
	}
	wantNext := ""
	if order == statuspage.OrderBytes {
		wantNext = pages[9]
	}
	if s := st.summary; !s.More || s.Next != wantNext || s.Prefix != "page/" || s.Order != order.String() || s.Now.IsZero() || s.Clock != "store" || s.UncertaintyMS <= 0 {
		t.Errorf("summary of the first page: %+v; want more, next %q, order %q, in the server's time", s, wantNext, order)
	}

	// The rest, a page at a time, where the order allows it.
	if order == statuspage.OrderBytes {
		all := st.names
		for next := st.summary.Next; next != ""; {
			r := status("--json", "--prefix", "page/", "--limit", "10", "--after", next)
			page := parseStatusJSON(t, r.stdout)
			if r.code != 0 || len(page.names) > 10 || len(all) > len(pages) {
				t.Fatalf("status --after %s: exit %d, %d names\nstderr: %s", next, r.code, len(page.names), r.stderr)
			}
			all, next = append(all, page.names...), page.summary.Next
			if page.summary.More != (next != "") {
				t.Errorf("summary %+v: more and next disagree", page.summary)
			}
		}
		if !slices.Equal(all, pages) {
			t.Errorf("paging 10 at a time listed %q, want %q", all, pages)
		}
	} else {
		r := status("--json", "--prefix", "page/", "--after", "page/03")
		if r.code != exitUsage || !strings.Contains(r.stderr, "FerretDB") || r.stdout != "" {
			t.Errorf("status --after on FerretDB: exit %d, stdout %q, stderr %q; want %d, nothing printed, and why", r.code, r.stdout, r.stderr, exitUsage)
		}
	}

	// The whole list, streamed, with nothing more to follow.
	r = status("--json")
	st = parseStatusJSON(t, r.stdout)
	want := slices.Clone(used)
	if order == statuspage.OrderBytes {
		slices.Sort(want)
	}
	if r.code != 0 || !slices.Equal(st.names, want) || st.summary.More || st.summary.Next != "" {
		t.Errorf("status --json: exit %d, names %q, summary %+v; want %q and no more", r.code, st.names, st.summary, want)
	}

	// A page as a table: columns as wide as their cells, and how to list
	// the next page.
	r = status("--prefix", "page/", "--limit", "3")
	lines := readLines(r.stdout)
	if r.code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], "database ") {
		t.Fatalf("status --prefix page/ --limit 3: exit %d\n%s\nstderr: %s\nwant the database read, a header, 3 rows and a note", r.code, r.stdout, r.stderr)
	}
	lines = lines[1:]
	stateAt := len("page/00  mutex  ")
	for i, l := range lines[:4] {
		if at := utf8.RuneCountInString(l[:strings.Index(l, "  ")]); i > 0 && at != len(pages[i-1]) {
			t.Errorf("row %d %q: want the name %q first", i, l, pages[i-1])
		}
		state := "STATE"
		if i > 0 {
			state = strings.Fields(l)[2]
		}
		if col := strings.Index(l, "  "+state+" ") + 2; col != stateAt {
			t.Errorf("line %d: the STATE column begins at %d, want %d:\n%s", i, col, stateAt, r.stdout)
		}
	}
	note := "(more follow: dsync status --limit 3 --after " + pages[2] + " --prefix page/)"
	if order != statuspage.OrderBytes {
		note = "(more follow; this server lists in the order of first use"
	}
	if !strings.HasPrefix(lines[4], note) {
		t.Errorf("the note after a page: %q, want it to begin with %q", lines[4], note)
	}

	// Nothing with the prefix; a bad limit; NAME with a page.
	if r := status("--prefix", "nothing/"); r.code != 0 || !strings.Contains(r.stdout, `no locks or elections beginning with "nothing/"`) {
		t.Errorf("status --prefix nothing/: exit %d, stdout %q", r.code, r.stdout)
	}
	for _, args := range [][]string{{"--limit", "-1"}, {"page/01", "--limit", "3"}, {"page/01", "--prefix", "page/"}} {
		if r := status(args...); r.code != exitUsage || len(readLines(r.stderr)) != 1 {
			t.Errorf("status %q: exit %d, stderr %q; want %d and one line", args, r.code, r.stderr, exitUsage)
		}
	}
	// NAME of a free lock: listed, free.
	if r := status("--json", "page/03"); r.code != 0 || len(parseStatusJSON(t, r.stdout).locks) != 1 {
		t.Errorf("status --json page/03: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// Names that white space or unprintable characters would hide are
// quoted in the table: "k" and "k " are told apart.
func TestShownName(t *testing.T) {
	for in, want := range map[string]string{
		"k": "k", "report-2026-11-23": "report-2026-11-23", "k ": `"k "`, " k": `" k"`, "a b": `"a b"`,
		"tab\there": `"tab\there"`, "bell\a": `"bell\a"`, `"q"`: `"\"q\""`, "": `""`, "é": "é",
	} {
		if got := shownName(in); got != want {
			t.Errorf("shownName(%q) = %s, want %s", in, got, want)
		}
	}
}
