//go:build unix

package main

import (
	"encoding/json"
	"io"
	"math"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/partitions"
	"github.com/go-dsync/dsync/internal/statusread"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// dsync status --json: one statuspage.Record per line (NDJSON), in the
// status page's schema (package statuspage documents it, and
// docs/observability.md shows it): each lock and election as it is read,
// then the partitions whose shards were read, the revocations, and the
// summary. It fills in the records as the page does (statuspage's
// read.go), and adds what only the command knows: the command a holder
// or leader on this host runs, the uncertainty of the server's clock,
// and the database read. TestStatusJSONIsThePagesSchema holds the two
// alike.

// jsonSink prints each lock and election on a line of its own, as it is
// read.
type jsonSink struct {
	enc         *json.Encoder
	cmds        commandFinder
	revocations []statuspage.Revocation // newest first
	revoked     map[string]bool         // their sessions
	shards      partitions.Set[statuspage.Election]
}

// newJSONSink returns a sink that prints to w, and marks the claims of
// the sessions that rs revoked.
func newJSONSink(w io.Writer, rs []dsync.Revocation) *jsonSink {
	s := &jsonSink{enc: json.NewEncoder(w), revoked: map[string]bool{}}
	for _, r := range rs {
		s.revoked[r.Session] = true
		s.revocations = append(s.revocations, statuspage.Revocation{Session: r.Session, By: r.By, Reason: r.Reason, At: r.At})
	}
	slices.SortFunc(s.revocations, func(a, b statuspage.Revocation) int { return b.At.Compare(a.At) }) // newest first
	return s
}

func (s *jsonSink) Lock(rl statusread.Lock) error {
	l := statuspage.Lock{Key: rl.Key, Kind: rl.Kind, Name: rl.Name, State: rl.State(), Holders: []statuspage.Claim{}, Waiting: []statuspage.Claim{}}
	for _, c := range rl.Holders {
		l.Holders = append(l.Holders, s.claim(c, rl.Now))
	}
	for _, c := range rl.Waiting {
		l.Waiting = append(l.Waiting, s.claim(c, rl.Now))
	}
	return s.enc.Encode(statuspage.Record{Lock: &l})
}

func (s *jsonSink) claim(c dsync.ClaimInfo, now time.Time) statuspage.Claim {
	cmd, _ := s.cmds.of(c.Host, c.PID)
	return statuspage.Claim{
		Token: c.Token, Owner: c.Owner, Host: c.Host, PID: c.PID, CommandPID: cmd,
		Mode: c.Mode.String(), Weight: c.Weight, Limit: c.Limit,
		QueuedAt: c.QueuedAt, ExpiresAt: c.ExpiresAt, HeldForMS: millis(c.QueuedAt, now), ExpiresInMS: millis(now, c.ExpiresAt),
		Session: c.Session, Revoked: s.revoked[c.Session],
	}
}

// Election prints re, unless it is a partition's shard: done prints the
// shards in their partition's line.
func (s *jsonSink) Election(re statusread.Election) error {
	now := re.Now
	e := statuspage.Election{Name: re.Name, Key: leader.LockKey(re.Name), Members: []statuspage.Member{}}
	if info := re.Leader; info != nil {
		cmd, _ := s.cmds.of(info.Host, info.PID)
		e.Leader = &statuspage.Leader{ID: info.ID, Host: info.Host, PID: info.PID, CommandPID: cmd, Version: info.Version, Value: info.Value,
			Term: info.Token, Since: info.Since, HeldForMS: millis(info.Since, now)}
		if c := re.Lease; c != nil {
			e.Leader.ExpiresAt, e.Leader.ExpiresInMS = c.ExpiresAt, millis(now, c.ExpiresAt)
		}
	}
	for _, m := range re.Members {
		e.Members = append(e.Members, statuspage.Member{ID: m.ID, Host: m.Host, PID: m.PID, Version: m.Version,
			Leader: e.Leader != nil && m.ID == e.Leader.ID, LastSeen: m.LastSeen, LastSeenMS: millis(m.LastSeen, now)})
	}
	if s.shards.Add(e.Name, e) {
		return nil
	}
	return s.enc.Encode(statuspage.Record{Election: &e})
}

// done prints the partitions gathered, the revocations and the summary.
func (s *jsonSink) done(sum statusSummary) error {
	for _, p := range s.shards.Partitions() {
		jp := statuspage.Partition{Name: p.Name, Shards: []statuspage.Shard{}}
		for _, sh := range p.Shards {
			jp.Shards = append(jp.Shards, statuspage.Shard{Shard: sh.Index, Election: sh.Of.Name, Key: sh.Of.Key, Owner: sh.Of.Leader})
		}
		if err := s.enc.Encode(statuspage.Record{Partition: &jp}); err != nil {
			return err
		}
	}
	for _, r := range s.revocations {
		if err := s.enc.Encode(statuspage.Record{Revocation: &r}); err != nil {
			return err
		}
	}
	js := statuspage.Summary{Now: sum.now, Clock: "store", UncertaintyMS: int64(math.Ceil(float64(sum.within) / float64(time.Millisecond))),
		Prefix: sum.sel.prefix, After: sum.sel.after, More: sum.More, Next: sum.Next,
		Database: sum.database, Collection: sum.collection, Elsewhere: sum.elsewhere}
	if sum.Order != 0 {
		js.Order = sum.Order.String()
	}
	return s.enc.Encode(statuspage.Record{Summary: &js})
}

// millis is the whole milliseconds from a to b: 0 if b is not after a.
func millis(a, b time.Time) int64 { return max(0, b.Sub(a).Milliseconds()) }
