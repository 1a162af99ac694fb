//go:build unix

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-dsync/dsync/statuspage"
)

// Who waits for whom among lock sets (dsync/lockset), after the table:
// each waiting claim of a set among the keys listed, with the holders it
// waits for and their sets, and what the set holds while it waits where
// its wait note says (statuspage.SetRecords.WaitsOf); then the deadlocks
// between sets broken in the last day (their records). Printed only when
// there is any; a store that keeps no notes or no records is said to,
// beside them. --json prints them as records of their own
// (status_json.go).

// setWaitSink is the table's sink, gathering the sets' waits of the
// locks it is given.
type setWaitSink struct {
	statusSink
	sets  *statuspage.SetRecords
	waits []statuspage.SetWait
}

func (s *setWaitSink) Lock(l statuspage.LockState) error {
	s.waits = append(s.waits, s.sets.WaitsOf(l)...)
	return s.statusSink.Lock(l)
}

// printSetWaits prints waits and sets' deadlocks as the table's last
// lines, judged at now, the server's time.
func printSetWaits(w io.Writer, waits []statuspage.SetWait, sets *statuspage.SetRecords, now time.Time) error {
	var b strings.Builder
	if len(waits) > 0 {
		b.WriteString("\nlock sets waiting:\n")
		for _, sw := range waits {
			writeSetWait(&b, sw)
		}
		if !sets.WaitsKept {
			b.WriteString("  (the store keeps no wait notes: what a set holds while it waits is not known)\n")
		}
		if !sets.DeadlocksKept {
			b.WriteString("  (the store keeps no records of deadlocks broken)\n")
		}
	}
	if len(sets.Deadlocks) > 0 {
		b.WriteString("\ndeadlocks broken (last day):\n")
		for _, d := range sets.Deadlocks {
			writeDeadlock(&b, d, now)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSetWait writes one line: `set S (HOST pid P) holds A, B · waits
// for K (token T) held by set Z (HOST pid P, token U), 12s`.
func writeSetWait(b *strings.Builder, sw statuspage.SetWait) {
	fmt.Fprintf(b, "  set %s (%s pid %d)", sw.Set, sw.Host, sw.PID)
	switch {
	case sw.Noted && len(sw.Holds) > 0:
		names := make([]string, len(sw.Holds))
		for i, k := range sw.Holds {
			_, names[i] = statuspage.KindOf(k)
		}
		fmt.Fprintf(b, " holds %s since %s ·", strings.Join(names, ", "), stamp(sw.Since))
	case !sw.Noted:
		b.WriteString(" (no note yet: what it holds is not known) ·")
	}
	fmt.Fprintf(b, " waits for %s (%s, token %d) held by ", sw.Name, sw.Kind, sw.Token)
	for i, h := range sw.HeldBy {
		if i > 0 {
			b.WriteString(" and ")
		}
		if h.Set != "" {
			fmt.Fprintf(b, "set %s ", h.Set)
		}
		fmt.Fprintf(b, "(%s pid %d, token %d)", h.Host, h.PID, h.Token)
	}
	if len(sw.HeldBy) == 0 {
		b.WriteString("nobody now")
	}
	fmt.Fprintf(b, ", %s\n", fmtDur(time.Duration(sw.WaitingMS)*time.Millisecond))
}

// writeDeadlock writes one line: `TIME victim S (HOST pid P): S -A-> Z
// -B-> S`, marked when of the last hour before now.
func writeDeadlock(b *strings.Builder, d statuspage.Deadlock, now time.Time) {
	fmt.Fprintf(b, "  %s victim %s (%s pid %d):", stamp(d.At), d.Victim, d.Host, d.PID)
	for i, e := range d.Cycle {
		if i == 0 {
			fmt.Fprintf(b, " %s", e.Set)
		}
		fmt.Fprintf(b, " -%s-> %s", e.Name, e.HeldBy)
	}
	if now.Sub(d.At) < recentStall {
		b.WriteString("  (last hour)")
	}
	b.WriteString("\n")
}
