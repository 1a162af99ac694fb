//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// The drained members of the partitions dsync status showed (dsync
// drain), after the table: which member, its process, and who drained it
// when and why. One read per partition shown (on MongoDB the members and
// the drains come in one find).

// membersAndDirectives is leadermongo's one-find read of both.
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

// printDrained prints the drained members of each partition of names,
// read from ms, if any are drained.
func printDrained(ctx context.Context, w io.Writer, ms leader.MemberStore, names []string) error {
	both, ok := ms.(membersAndDirectives)
	if !ok {
		return nil
	}
	var lines []string
	for _, name := range names {
		members, ds, err := both.MembersAndDirectives(ctx, name, directiveSeen)
		if err != nil {
			return err
		}
		drained := operator.Drained(ds)
		latest := map[string]operator.Directive{}
		for _, d := range ds {
			if d.Kind == operator.DirectiveDrain && d.Gen >= latest[d.Member].Gen {
				latest[d.Member] = d
			}
		}
		ids := make([]string, 0, len(drained))
		for id := range drained {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			where := "no status in the last " + fmtDur(directiveSeen)
			if i := slices.IndexFunc(members, func(m leader.Member) bool { return m.ID == id }); i >= 0 {
				where = fmt.Sprintf("%s pid %d", members[i].Host, members[i].PID)
			}
			d := latest[id]
			why := ""
			if d.Reason != "" {
				why = ": " + d.Reason
			}
			lines = append(lines, fmt.Sprintf("  %s  %s  (%s)  drained by %s at %s%s\n", shownName(name), id, where, d.By, stamp(d.At), why))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\ndrained partition members:\n%s", strings.Join(lines, ""))
	return err
}
