//go:build unix

package main

import (
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/go-dsync/dsync/statuspage"
)

// dsync status --json: one statuspage.Record per line (NDJSON), in the
// status page's schema (package statuspage documents it, and
// docs/observability.md shows it): each lock and election as it is read,
// then the partitions whose shards were read, the revocations, the stall
// records, the lock sets' waits and deadlocks broken, and the summary. statuspage.Stream makes the records as the
// page makes them; this file adds what only the command knows: the
// command a holder or leader on this host runs, the uncertainty of the
// server's clock, and the database read. TestStatusJSONGolden holds the lines byte for byte.

// jsonSink prints each lock and election on a line of its own, as it is
// read.
type jsonSink struct {
	statuspage.Sink              // statuspage.Stream's
	end             func() error // statuspage.Stream's
	enc             *json.Encoder
	cmds            commandFinder
	sets            *statuspage.SetRecords
}

// newJSONSink returns a sink that prints to w, marks the claims of the
// sessions that rs revoked, and prints, at the end, the partitions with
// the members that drained reads drained (nil: none), rs, stalls, the
// lock sets' waits and deadlocks that sets tells (nil: none), and the
// outages ridden through.
func newJSONSink(w io.Writer, rs []statuspage.Revocation, stalls []statuspage.Stall, sets *statuspage.SetRecords, outages []statuspage.Outage, drained func(partition string) ([]statuspage.DrainedMember, error)) *jsonSink {
	s := &jsonSink{enc: json.NewEncoder(w), sets: sets}
	s.Sink, s.end = statuspage.Stream(rs, stalls, sets, outages, drained, s.print)
	return s
}

// print prints r, with the commands that its holders and leaders on
// this host run.
func (s *jsonSink) print(r statuspage.Record) error {
	if l := r.Lock; l != nil {
		for _, cs := range [][]statuspage.Claim{l.Holders, l.Waiting} {
			for i := range cs {
				cs[i].CommandPID, _ = s.cmds.of(cs[i].Host, cs[i].PID)
			}
		}
	}
	if e := r.Election; e != nil {
		s.leaderCommand(e.Leader)
	}
	if p := r.Partition; p != nil {
		for _, sh := range p.Shards {
			s.leaderCommand(sh.Owner)
		}
	}
	return s.enc.Encode(r)
}

// leaderCommand fills in the command that l (if any) runs.
func (s *jsonSink) leaderCommand(l *statuspage.Leader) {
	if l != nil {
		l.CommandPID, _ = s.cmds.of(l.Host, l.PID)
	}
}

// done prints the partitions gathered, the revocations, the stall
// records, the lock sets' waits and deadlocks, and the summary.
func (s *jsonSink) done(sum statusSummary) error {
	if err := s.end(); err != nil {
		return err
	}
	js := statuspage.Summary{Now: sum.now, Clock: "store", UncertaintyMS: int64(math.Ceil(float64(sum.within) / float64(time.Millisecond))),
		Prefix: sum.sel.prefix, After: sum.sel.after, More: sum.More, Next: sum.Next,
		Database: sum.database, Collection: sum.collection, Elsewhere: sum.elsewhere}
	if s.sets != nil {
		js.NoWaitNotes, js.NoDeadlockRecords = !s.sets.WaitsKept, !s.sets.DeadlocksKept
	}
	if sum.Order != 0 {
		js.Order = sum.Order.String()
	}
	return s.enc.Encode(statuspage.Record{Summary: &js})
}
