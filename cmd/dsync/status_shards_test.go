//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// The shards of a partition are printed in a table of their own, in shard
// order, an unowned shard as such, and not as elections; an election
// named like no shard stays in the election table.
func TestShardTable(t *testing.T) {
	var out strings.Builder
	sink := newTableSink(&out, "", "db.coll", selection{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	owned := func(name string, token uint64) statuspage.ElectionState {
		return statuspage.ElectionState{Name: name, Now: now, Leader: &leader.Info{ID: "c", Host: "h1", PID: 42, Token: token},
			Lease: &statuspage.ClaimInfo{Token: token, Holds: true, ExpiresAt: now.Add(2 * time.Second)}}
	}
	for _, e := range []statuspage.ElectionState{owned("jobs#1", 7), {Name: "jobs#0", Now: now}, owned("solo", 3)} {
		if err := sink.Election(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.done(statusSummary{}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := `PARTITION  SHARD  TOKEN  HOST      PID  EXPIRES IN
jobs           0      -  no owner    -           -
jobs           1      7  h1         42          2s
`
	if !strings.HasSuffix(strings.TrimRight(got, "\n")+"\n", want) || !strings.Contains(got, "solo") || strings.Contains(got, "jobs#") {
		t.Errorf("status table:\n%s\nwant it to end with:\n%s", got, want)
	}
}
