//go:build unix

package main

// How dsync status shows the shards of a leader.Partition: each shard is
// the election "NAME#I", read as every election is, and gathered by
// internal/partitions (which the status page uses too) into a table of
// its own after the elections, and into a "partition" line of --json
// before the summary.

import (
	"io"
	"strconv"
	"time"

	"github.com/go-dsync/dsync/internal/partitions"
	"github.com/go-dsync/dsync/internal/statusread"
	"github.com/go-dsync/dsync/leader"
)

type (
	// jsonPartition is a partition in dsync status --json: its shards
	// read, in order. Each is an election too, on a line of its own.
	jsonPartition struct {
		Kind   string      `json:"kind"` // "partition"
		Name   string      `json:"name"`
		Shards []jsonShard `json:"shards"`
	}
	jsonShard struct {
		Shard    int    `json:"shard"`
		Election string `json:"election"` // "NAME#I"
		Key      string `json:"key"`      // of its lease
		// Token is the fencing token of the owner's term; 0 and Owner
		// null when nobody owns the shard.
		Token uint64          `json:"token"`
		Owner *jsonShardOwner `json:"owner"`
		Lease *jsonHolder     `json:"lease,omitempty"` // the owner's lease, when read
	}
	jsonShardOwner struct {
		ID   string `json:"id"` // the shard's candidate, one per shard
		Host string `json:"host"`
		PID  int    `json:"pid"` // the process of the owner, as its lease says
	}
)

// jsonPartitions prints the partitions gathered, a line each.
func (s *jsonSink) jsonPartitions() error {
	for _, p := range s.shards.Partitions() {
		jp := jsonPartition{Kind: "partition", Name: p.Name, Shards: []jsonShard{}}
		for _, sh := range p.Shards {
			e := sh.Of
			js := jsonShard{Shard: sh.Index, Election: e.Name, Key: leader.LockKey(e.Name)}
			if l := e.Leader; l != nil {
				js.Token, js.Owner = l.Token, &jsonShardOwner{ID: l.ID, Host: l.Host, PID: l.PID}
			}
			if e.Lease != nil {
				js.Lease = s.holder(e.Lease, e.Now)
			}
			jp.Shards = append(jp.Shards, js)
		}
		if err := s.enc.Encode(jp); err != nil {
			return err
		}
	}
	return nil
}

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
func shardRow(name string, i int, e statusread.Election, cell func(string, int) string) []string {
	if e.Leader == nil {
		return []string{name, strconv.Itoa(i), "-", "no owner", "-", "-"}
	}
	left := "-"
	if e.Lease != nil {
		left = fmtDur(max(e.Lease.ExpiresAt.Sub(e.Now), time.Duration(0)))
	}
	l := e.Leader
	return []string{name, strconv.Itoa(i), strconv.FormatUint(l.Token, 10), cell(l.Host, maxHostWidth), strconv.Itoa(l.PID), left}
}

// shardSet is what each sink gathers.
type shardSet = partitions.Set[statusread.Election]
