//go:build unix

package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-dsync/dsync/statuspage"
)

// The stall records dsync status shows after the revocations: which hold
// stalled (its work reported no progress within its progress deadline),
// whose and when, as the store keeps them (statusStore.stalls reads
// them). Printed only when there are any, newest first; a stall of the
// last hour before the read's time is marked.

// recentStall is how recent a stall is marked as one.
const recentStall = time.Hour

// printStalls prints ss as the table's last lines, judged at now, the
// server's time (--json prints them as records of their own:
// status_json.go).
func printStalls(w io.Writer, ss []statuspage.Stall, now time.Time) error {
	if len(ss) == 0 {
		return nil
	}
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b statuspage.Stall) int { return b.At.Compare(a.At) }) // newest first
	if _, err := fmt.Fprintf(w, "\nstalled holds:\n"); err != nil {
		return err
	}
	for _, s := range ss {
		kind, name := statuspage.KindOf(s.Key)
		mark := ""
		if now.Sub(s.At) < recentStall {
			mark = "  (last hour)"
		}
		if _, err := fmt.Fprintf(w, "  %s (%s)  token %d  %s pid %d  stalled at %s, last progress %s, held since %s  (owner %s, session %s)%s\n",
			name, kind, s.Token, s.Host, s.PID, stamp(s.At), stamp(s.LastProgress), stamp(s.Since), s.Owner, s.Session, mark); err != nil {
			return err
		}
	}
	return nil
}

// stamp is t in UTC to the second, or "?" where the holder did not say.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.UTC().Format(time.RFC3339)
}
