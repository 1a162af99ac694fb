//go:build unix

package main

// How dsync status prints what it reads as tables: the locks as they
// come, a page at a time, in columns as wide as their cells, then the
// elections, and finds the commands that holders on this machine run.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// Table cells are cut to these widths (in terminal columns), so that one
// long name does not make every line hundreds of columns wide.
const (
	maxNameWidth    = 40
	maxHostWidth    = 30
	lockHostWidth   = 20 // in the lock table, whose lines come a page at a time
	maxVersionWidth = 20
)

// The lock table is printed a page at a time, its columns as wide as the
// cells so far: a page is printed once it has pageLines lines, or once a
// line waited pageWait for more (a long list streams).
const (
	pageLines = 100
	pageWait  = time.Second
)

// lockHeader is the lock table's header ('>': right-aligned).
var lockHeader = []string{"NAME", "KIND", "STATE", ">TOKEN", "HOST", ">PID", ">CMD PID", ">HELD FOR", ">EXPIRES IN", ">WAITING"}

// tableSink prints the locks as they come, a page at a time, and the
// elections in a table after them (a list has few), then the shards of
// partitions (see status_shards.go).
type tableSink struct {
	w      io.Writer
	indent string
	where  string    // the database and collection, for "nothing found"
	sel    selection // for how to list the next page
	cmds   commandFinder

	locks     int
	page      [][]string // lock lines read, not yet printed
	pageSince time.Time  // when the first of them was read
	widths    []int      // of the lock table's columns so far
	elections []statuspage.ElectionState
	shards    shardSet // the elections that are a partition's shards
	cut       bool     // a name was cut short
}

func newTableSink(w io.Writer, indent, where string, sel selection) *tableSink {
	return &tableSink{w: w, indent: indent, where: where, sel: sel}
}

// shownName is how the table shows a lock or election name: as it is,
// unless that would hide something (white space, which also splits the
// columns, a character that does not print, a leading quote): then
// quoted as Go quotes a string, so that "k" and "k " differ. --json
// gives names as they are.
func shownName(s string) string {
	hides := func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }
	if s == "" || strings.HasPrefix(s, `"`) || strings.IndexFunc(s, hides) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// cell fits s to a cell of width columns, noting a name cut short.
func (t *tableSink) cell(s string, width int) string {
	c, shortened := fitCellCut(s, width)
	t.cut = t.cut || shortened && width == maxNameWidth
	return c
}

// flush prints the lock lines read so far, the header first if none was
// printed: each column as wide as the widest of its cells so far.
func (t *tableSink) flush() error {
	if len(t.page) == 0 {
		return nil
	}
	lines := t.page
	if t.widths == nil {
		t.widths = make([]int, len(lockHeader))
		header := make([]string, len(lockHeader))
		for i, h := range lockHeader {
			header[i] = strings.TrimPrefix(h, ">")
		}
		lines = append([][]string{header}, lines...)
	}
	for _, l := range lines {
		for i, c := range l {
			t.widths[i] = max(t.widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(t.indent)
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(padCell(c, t.widths[i], strings.HasPrefix(lockHeader[i], ">")))
		}
		b.WriteString("\n")
	}
	t.page = t.page[:0]
	_, err := io.WriteString(t.w, trimLines(b.String()))
	return err
}

// trimLines drops the blanks at the ends of s's lines.
func trimLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if body, ok := strings.CutSuffix(l, "\n"); ok {
			lines[i] = strings.TrimRight(body, " ") + "\n"
		}
	}
	return strings.Join(lines, "")
}

// add queues one line of the lock table, and prints the page once it is
// full or has waited long enough.
func (t *tableSink) add(cells ...string) error {
	if len(t.page) == 0 {
		t.pageSince = time.Now()
	}
	t.page = append(t.page, cells)
	if len(t.page) >= pageLines || time.Since(t.pageSince) >= pageWait {
		return t.flush()
	}
	return nil
}

func (t *tableSink) Lock(l statuspage.LockState) error {
	t.locks++
	name := t.cell(shownName(l.Name), maxNameWidth)
	if len(l.Holders) == 0 {
		return t.add(name, l.Kind, l.State(), "-", "-", "-", "-", "-", "-", "-")
	}
	// One line per holder: readers and a Semaphore's holders share it.
	for _, h := range l.Holders {
		token := strconv.FormatUint(h.Token, 10)
		host, pid, cmd := t.cell(h.Host, lockHostWidth), strconv.Itoa(h.PID), t.cmds.cell(h.Host, h.PID)
		heldFor, left := fmtDur(max(l.Now.Sub(h.QueuedAt), 0)), expiresIn(h.ExpiresAt, l.Now)
		if err := t.add(name, l.Kind, l.State(), token, host, pid, cmd, heldFor, left, strconv.Itoa(len(l.Waiting))); err != nil {
			return err
		}
	}
	return nil
}

func (t *tableSink) Election(e statuspage.ElectionState) error {
	if !t.shards.Add(e.Name, e) {
		t.elections = append(t.elections, e)
	}
	return nil
}

// done prints the elections, then says whether more follow and whether
// names were cut short.
func (t *tableSink) done(s statusSummary) error {
	if err := t.flush(); err != nil {
		return err
	}
	t.writeElections()
	if t.shards.Len() > 0 {
		if t.locks > 0 || len(t.elections) > 0 {
			fmt.Fprintln(t.w)
		}
		t.writePartitions(t.w)
	}
	if t.locks == 0 && len(t.elections) == 0 && t.shards.Len() == 0 {
		return t.writeNothing(s)
	}
	if s.More {
		t.writeMore(s)
	}
	if t.cut {
		fmt.Fprintf(t.w, "\n%s(names cut to %d characters; 'dsync status --json' shows them whole)\n", t.indent, maxNameWidth)
	}
	return nil
}

// writeElections prints the table of the elections, if any.
func (t *tableSink) writeElections() {
	if len(t.elections) == 0 {
		return
	}
	if t.locks > 0 {
		fmt.Fprintln(t.w)
	}
	tb := newTable("ELECTION", "ROLE", ">TERM", "HOST", ">PID", ">CMD PID", "VERSION", ">LAST SEEN", ">EXPIRES IN")
	for _, e := range t.elections {
		for _, row := range t.electionRows(e) {
			tb.add(row...)
		}
	}
	tb.write(t.w, t.indent)
}

// writeNothing says that the selection found nothing, and where else to
// look if s knows.
func (t *tableSink) writeNothing(s statusSummary) error {
	what := "no locks or elections"
	if t.sel.prefix != "" {
		what += fmt.Sprintf(" beginning with %q", t.sel.prefix)
	}
	if t.sel.after != "" {
		what += fmt.Sprintf(" after %q", t.sel.after)
	}
	if s.hint != "" {
		_, err := fmt.Fprintf(t.w, "%s%s in %s; %s\n", t.indent, what, t.where, s.hint)
		return err
	}
	_, err := fmt.Fprintf(t.w, "%s%s in %s\n", t.indent, what, t.where)
	return err
}

// writeMore says that more follow (--limit), and how to list them.
func (t *tableSink) writeMore(s statusSummary) {
	fmt.Fprintln(t.w)
	if s.Next == "" {
		fmt.Fprintf(t.w, "%s(more follow; this server lists in the order of first use, and cannot resume after a name: list without --limit, or narrow the list with --prefix)\n", t.indent)
		return
	}
	next := fmt.Sprintf("dsync status --limit %d --after %s", t.sel.limit, shellQuote(s.Next))
	if t.sel.prefix != "" {
		next += " --prefix " + shellQuote(t.sel.prefix)
	}
	fmt.Fprintf(t.w, "%s(more follow: %s)\n", t.indent, next)
}

// electionRows are the rows of election e: its leader first (or "no
// leader"), then the members standing by.
func (t *tableSink) electionRows(e statuspage.ElectionState) [][]string {
	name := t.cell(shownName(e.Name), maxNameWidth)
	term, left := "", "-"
	if e.Leader != nil {
		term = strconv.FormatUint(e.Leader.Token, 10)
	}
	if e.Lease != nil {
		left = expiresIn(e.Lease.ExpiresAt, e.Now)
	}
	var first []string // the leader's row
	var standby [][]string
	for _, m := range e.Members {
		row := []string{name, "standby", "", t.cell(m.Host, maxHostWidth), strconv.Itoa(m.PID), "-",
			t.cell(versionCell(m), maxVersionWidth), fmtDur(max(e.Now.Sub(m.LastSeen), 0)) + " ago", ""}
		if e.Leader != nil && m.ID == e.Leader.ID {
			row[1], row[2], row[5], row[8] = "leader", term, t.cmds.cell(m.Host, m.PID), left
			first = row
		} else {
			standby = append(standby, row)
		}
	}
	switch {
	case first != nil:
	case e.Leader != nil: // the leader's status document is missing or stale
		l := e.Leader
		first = []string{name, "leader", term, t.cell(l.Host, maxHostWidth), strconv.Itoa(l.PID), t.cmds.cell(l.Host, l.PID),
			t.cell(dash(l.Version), maxVersionWidth), "-", left}
	default:
		first = []string{name, "no leader", "", "", "", "", "", "", ""}
	}
	return append([][]string{first}, standby...)
}

// commandFinder finds the commands that holders and candidates on this
// host run: a dsync lock or dsync elect process has one child, its
// command. A claim tells the holder's pid only. It reads the process
// table once, and again, at most once a second, for a pid it lacks.
type commandFinder struct {
	host     string
	children map[int]int // the lowest child of each process
	read     time.Time
}

// of returns the pid of the command that pid, on host, runs.
func (f *commandFinder) of(host string, pid int) (int, bool) {
	if f.host == "" {
		f.host, _ = os.Hostname()
	}
	if host != f.host || f.host == "" {
		return 0, false
	}
	c, ok := f.children[pid]
	if !ok && (f.children == nil || time.Since(f.read) > time.Second) {
		f.children, f.read = childProcesses(nil), time.Now()
		c, ok = f.children[pid]
	}
	return c, ok
}

// cell is the command's pid as a table cell.
func (f *commandFinder) cell(host string, pid int) string {
	if c, ok := f.of(host, pid); ok {
		return strconv.Itoa(c)
	}
	return "-"
}

// shellQuote quotes s for a POSIX shell, unless it needs no quotes.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:@%+=,", r)))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fitCell makes s fit a table cell of width columns: control
// characters quoted, and cut short with "…".
func fitCell(s string, width int) string {
	c, _ := fitCellCut(s, width)
	return c
}

// fitCellCut is fitCell, also reporting whether s was cut short (not
// merely quoted).
func fitCellCut(s string, width int) (string, bool) {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) && r != ' ' }) >= 0 {
		s = strconv.Quote(s)
	}
	return cutToWidth(s, width)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// versionCell is a member's version, with its priority (leader.WithPriority)
// when it set one: "1.4.0 p5".
func versionCell(m leader.Member) string {
	if m.Priority == 0 {
		return dash(m.Version)
	}
	return fmt.Sprintf("%s p%d", dash(m.Version), m.Priority)
}

// expiresIn is the EXPIRES IN cell of a holder whose session expires at
// at, read at now: "expired" once it has. A holder still listed then is
// not proven gone: within its outage grace (the default), its store was
// out for everyone (it holds again once the store is back), or it died
// and nothing proves it yet (the renewals of other processes through a
// TTL past its expiry do, or the grace's end); without a grace, only
// within the uncertainty of the read's clock.
func expiresIn(at, now time.Time) string {
	if !at.After(now) {
		return "expired"
	}
	return fmtDur(at.Sub(now))
}
