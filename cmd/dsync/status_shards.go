//go:build unix

package main

// How dsync status shows the shards of a leader.Partition: each shard is
// the election "NAME#I", read as every election is, and gathered by
// statuspage.ShardSet (which the status page uses too) into a table of
// its own after the elections (--json prints them as the status page
// does: status_json.go).

import (
	"io"
	"strconv"

	"github.com/go-dsync/dsync/statuspage"
)

// writePartitions prints the table of the partitions' shards: one line
// per shard, with its owner's host and pid, its token and when its lease
// ends.
func (t *tableSink) writePartitions(w io.Writer) {
	tb := newTable("PARTITION", ">SHARD", ">TOKEN", "HOST", ">PID", ">EXPIRES IN")
	for _, p := range t.shards.Partitions() {
		name := t.cell(shownName(p.Name), maxNameWidth)
		for _, sh := range p.Shards {
			tb.add(shardRow(name, sh.Index, sh.Of, t.cell)...)
		}
	}
	tb.write(w, t.indent)
}

// shardRow is the table's line of shard i, read as election e.
func shardRow(name string, i int, e statuspage.ElectionState, cell func(string, int) string) []string {
	if e.Leader == nil {
		return []string{name, strconv.Itoa(i), "-", "no owner", "-", "-"}
	}
	left := "-"
	if e.Lease != nil {
		left = expiresIn(e.Lease.ExpiresAt, e.Now)
	}
	l := e.Leader
	return []string{name, strconv.Itoa(i), strconv.FormatUint(l.Token, 10), cell(l.Host, maxHostWidth), strconv.Itoa(l.PID), left}
}

// shardSet is what each sink gathers.
type shardSet = statuspage.ShardSet[statuspage.ElectionState]
