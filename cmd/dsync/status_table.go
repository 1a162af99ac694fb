//go:build unix

package main

// How dsync status prints what it read as tables, and finds the commands
// that holders on this machine run.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Table cells are cut to these widths (in characters), so that one long
// name does not make every line hundreds of columns wide.
const (
	maxNameWidth    = 40
	maxHostWidth    = 30
	maxVersionWidth = 20
)

// findCommands finds the commands that holders and candidates on this
// host run: a dsync lock or dsync elect process has one child, its
// command. A claim tells the holder's pid only.
func (st *status) findCommands() {
	host, err := os.Hostname()
	if err != nil {
		return
	}
	var pids []int
	for _, l := range st.locks {
		if l.holder != nil && l.holder.Host == host {
			pids = append(pids, l.holder.PID)
		}
	}
	for _, e := range st.elections {
		if e.leader != nil && e.leader.Host == host {
			pids = append(pids, e.leader.PID)
		}
		for _, m := range e.members {
			if m.Host == host {
				pids = append(pids, m.PID)
			}
		}
	}
	if len(pids) > 0 {
		st.commands = childProcesses(pids)
	}
}

// commandPID is the pid of the command holder pid runs, as a cell.
func (st *status) commandPID(pid int) string {
	if c, ok := st.commands[pid]; ok {
		return strconv.Itoa(c)
	}
	return "-"
}

// write prints the tables, reporting whether a name was cut short.
func (st *status) write(w io.Writer, indent string) (cut bool) {
	cell := func(s string, width int) string {
		c, shortened := fitCellCut(s, width)
		cut = cut || shortened && width == maxNameWidth
		return c
	}
	if len(st.locks) > 0 {
		t := newTable("LOCK", "STATE", ">TOKEN", "HOST", ">PID", ">CMD PID", ">HELD FOR", ">EXPIRES IN", ">WAITING")
		for _, l := range st.locks {
			token, host, pid, cmd, heldFor, left, waiting := "-", "-", "-", "-", "-", "-", "-"
			if h := l.holder; h != nil {
				token = strconv.FormatUint(h.Token, 10)
				host, pid, cmd = cell(h.Host, maxHostWidth), strconv.Itoa(h.PID), st.commandPID(h.PID)
				heldFor, left = fmtDur(max(st.now.Sub(h.QueuedAt), 0)), fmtDur(max(h.ExpiresAt.Sub(st.now), 0))
				waiting = strconv.Itoa(l.waiting)
			}
			t.add(cell(l.key, maxNameWidth), l.state(), token, host, pid, cmd, heldFor, left, waiting)
		}
		t.write(w, indent)
	}
	if len(st.elections) > 0 {
		if len(st.locks) > 0 {
			fmt.Fprintln(w)
		}
		t := newTable("ELECTION", "ROLE", ">TERM", "HOST", ">PID", ">CMD PID", "VERSION", ">LAST SEEN", ">EXPIRES IN")
		for _, e := range st.elections {
			for _, row := range st.electionRows(e, cell) {
				t.add(row...)
			}
		}
		t.write(w, indent)
	}
	return cut
}

// electionRows are the rows of election e: its leader first (or "no
// leader"), then the members standing by.
func (st *status) electionRows(e election, cell func(string, int) string) [][]string {
	name := cell(e.name, maxNameWidth)
	term, left := "", "-"
	if e.leader != nil {
		term = strconv.FormatUint(e.leader.Token, 10)
	}
	if e.lease != nil {
		left = fmtDur(max(e.lease.ExpiresAt.Sub(st.now), 0))
	}
	var first []string // the leader's row
	var standby [][]string
	for _, m := range e.members {
		row := []string{name, "standby", "", cell(m.Host, maxHostWidth), strconv.Itoa(m.PID), "-",
			cell(dash(m.Version), maxVersionWidth), fmtDur(max(st.now.Sub(m.LastSeen), 0)) + " ago", ""}
		if e.leader != nil && m.ID == e.leader.ID {
			row[1], row[2], row[5], row[8] = "leader", term, st.commandPID(m.PID), left
			first = row
		} else {
			standby = append(standby, row)
		}
	}
	switch {
	case first != nil:
	case e.leader != nil: // the leader's status document is missing or stale
		l := e.leader
		first = []string{name, "leader", term, cell(l.Host, maxHostWidth), strconv.Itoa(l.PID), st.commandPID(l.PID),
			cell(dash(l.Version), maxVersionWidth), "-", left}
	default:
		first = []string{name, "no leader", "", "", "", "", "", "", ""}
	}
	return append([][]string{first}, standby...)
}

// fitCell makes s fit a table cell of width characters: control
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
	if utf8.RuneCountInString(s) <= width {
		return s, false
	}
	return string([]rune(s)[:width-1]) + "…", true
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
