//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
	"github.com/go-dsync/dsync/statuspage"
)

// The drained members of the partitions dsync status showed (dsync
// drain), after the table: which member, its process, and who drained it
// when and why. One read per partition shown (on MongoDB the members and
// the drains come in one find), through the status page's Reader.

// membersAndDirectives is leadermongo's one-find read of both, which
// dsync drain needs to name its target.
type membersAndDirectives interface {
	MembersAndDirectives(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, []operator.Directive, error)
}

// partitionNames are the partitions whose shards the table showed.
func (t *tableSink) partitionNames() []string {
	var names []string
	for _, p := range t.shards.Partitions() {
		names = append(names, p.Name)
	}
	return names
}

// printDrained prints the drained members of each partition of names, as
// r reads them with a member's process shown when its status was written
// within directiveSeen (the window dsync drain names members in).
func printDrained(ctx context.Context, w io.Writer, r *statuspage.Reader, names []string) error {
	window := *r
	window.Seen = directiveSeen
	var lines []string
	for _, name := range names {
		drained, err := window.Drained(ctx, name)
		if err != nil {
			return err
		}
		for _, d := range drained {
			where := "no status in the last " + fmtDur(directiveSeen)
			if d.Host != "" || d.PID != 0 {
				where = fmt.Sprintf("%s pid %d", d.Host, d.PID)
			}
			why := ""
			if d.Reason != "" {
				why = ": " + d.Reason
			}
			lines = append(lines, fmt.Sprintf("  %s  %s  (%s)  drained by %s at %s%s\n", shownName(name), d.ID, where, d.By, stamp(d.At), why))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\ndrained partition members:\n%s", strings.Join(lines, ""))
	return err
}
