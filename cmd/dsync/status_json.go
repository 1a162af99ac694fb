//go:build unix

package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/statusread"
	"github.com/go-dsync/dsync/leader"
)

// The JSON of dsync status --json: one object per line (NDJSON), one per
// lock and per election as they are read, then one per partition whose
// shards were read (status_shards.go), then a summary. Times are the
// server's, durations in milliseconds, each measured from when its line
// was read.
type (
	jsonLock struct {
		Kind string `json:"kind"` // "lock"
		// Name is the name the primitive was made with, Primitive its
		// kind (mutex, rwmutex, semaphore, once), Key its key as stored
		// (a Semaphore "encode" claims "dsync:sem/encode").
		Name      string `json:"name"`
		Primitive string `json:"primitive"`
		Key       string `json:"key"`
		// State: held, read, U/N (a Semaphore's units held and limit),
		// done (a Once that ran to success), free.
		State string `json:"state"`
		// Mode: "exclusive" (a Mutex, a writer, a Once), "shared"
		// (readers) or "weighted" (a Semaphore); "" when free.
		Mode  string `json:"mode,omitempty"`
		Token uint64 `json:"token"` // the first holder's; 0 when free
		// Holder is the first holder; null when free. Holders are all of
		// them (readers, a Semaphore's holders), in queue order.
		Holder  *jsonHolder   `json:"holder"`
		Holders []*jsonHolder `json:"holders,omitempty"`
		// Units and Limit: a Semaphore's units held, and its limit.
		Units int64 `json:"units,omitempty"`
		Limit int64 `json:"limit,omitempty"`
		// Waiting counts the live claims queued behind the holders (0
		// when free).
		Waiting int `json:"waiting"`
	}
	jsonHolder struct {
		Token      uint64 `json:"token"`
		Weight     int64  `json:"weight,omitempty"` // a Semaphore holder's units
		Host       string `json:"host"`
		PID        int    `json:"pid"`                  // the process holding the lease
		CommandPID int    `json:"commandPid,omitempty"` // the command it runs, when known
		// AcquiredAt is when it queued for the lock (so a holder that
		// waited counts its wait). ExpiresAt is when its session expires
		// unless renewed.
		AcquiredAt time.Time `json:"acquiredAt"`
		ExpiresAt  time.Time `json:"expiresAt"`
		HeldForMS  float64   `json:"heldForMs"`
		// ExpiresInMS is 0 once the lease has expired.
		ExpiresInMS float64 `json:"expiresInMs"`
	}
	jsonElection struct {
		Kind      string       `json:"kind"` // "election"
		Name      string       `json:"name"`
		Primitive string       `json:"primitive"`       // "election"
		Key       string       `json:"key"`             // of its lease: "dsync:election/NAME"
		Term      uint64       `json:"term"`            // of the current leader; 0 when nobody leads
		Leader    *jsonMember  `json:"leader"`          // null when nobody leads
		Members   []jsonMember `json:"members"`         // seen within --seen, the leader included
		Lease     *jsonHolder  `json:"lease,omitempty"` // the leader's lease, when someone leads
	}
	jsonMember struct {
		ID         string    `json:"id"`
		Role       string    `json:"role"` // leader, standby
		Host       string    `json:"host"`
		PID        int       `json:"pid"`
		CommandPID int       `json:"commandPid,omitempty"`
		Version    string    `json:"version"`
		LastSeen   time.Time `json:"lastSeen"`
		AgoMS      float64   `json:"lastSeenAgoMs"`
	}
	jsonSummary struct {
		Kind          string    `json:"kind"` // "summary"
		ServerTime    time.Time `json:"serverTime"`
		UncertaintyMS float64   `json:"uncertaintyMs"`
		// Order is the order of the list: "bytes" (MongoDB) or "first
		// use" (FerretDB); absent when there is nothing to list.
		Order     string `json:"order,omitempty"`
		Locks     int    `json:"locks"`     // listed
		Elections int    `json:"elections"` // listed
		// Partitions counts the partitions whose shards were listed
		// (each shard is one of Elections).
		Partitions int `json:"partitions"`
		// More: --limit ended the list before its end. Next is the
		// --after that lists the rest, where the order allows it.
		More bool   `json:"more"`
		Next string `json:"next,omitempty"`
		// Database and Collection are where the list was read. When
		// nothing was listed, Elsewhere names the server's other
		// databases that have a collection of that name (if the user may
		// list them).
		Database   string   `json:"database"`
		Collection string   `json:"collection"`
		Elsewhere  []string `json:"elsewhere,omitempty"`
	}
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// jsonSink prints each lock and election on a line of its own, as it is
// read.
type jsonSink struct {
	enc    *json.Encoder
	cmds   commandFinder
	shards shardSet // the elections that are a partition's shards
}

func newJSONSink(w io.Writer) *jsonSink { return &jsonSink{enc: json.NewEncoder(w)} }

func (s *jsonSink) holder(c *dsync.ClaimInfo, now time.Time) *jsonHolder {
	cmd, _ := s.cmds.of(c.Host, c.PID)
	return &jsonHolder{Token: c.Token, Weight: c.Weight, Host: c.Host, PID: c.PID, CommandPID: cmd, AcquiredAt: c.QueuedAt, ExpiresAt: c.ExpiresAt,
		HeldForMS: ms(max(now.Sub(c.QueuedAt), 0)), ExpiresInMS: ms(max(c.ExpiresAt.Sub(now), 0))}
}

func (s *jsonSink) Lock(ls statusread.Lock) error {
	l := jsonLock{Kind: "lock", Name: ls.Name, Primitive: ls.Kind, Key: ls.Key, State: ls.State(), Waiting: len(ls.Waiting)}
	for i := range ls.Holders {
		l.Holders = append(l.Holders, s.holder(&ls.Holders[i], ls.Now))
	}
	if len(ls.Holders) > 0 {
		first := ls.Holders[0]
		l.Mode, l.Token, l.Holder = first.Mode.String(), first.Token, l.Holders[0]
		if first.Mode == dsync.ModeWeighted {
			l.Units, l.Limit = ls.Units(), first.Limit
		}
	}
	return s.enc.Encode(l)
}

func (s *jsonSink) Election(e statusread.Election) error {
	s.shards.Add(e.Name, e)
	je := jsonElection{Kind: "election", Name: e.Name, Primitive: statusread.KindElection, Key: leader.LockKey(e.Name), Members: []jsonMember{}}
	if e.Leader != nil {
		je.Term = e.Leader.Token
	}
	if e.Lease != nil {
		je.Lease = s.holder(e.Lease, e.Now)
	}
	for _, m := range e.Members {
		jm := jsonMember{ID: m.ID, Role: "standby", Host: m.Host, PID: m.PID, Version: m.Version,
			LastSeen: m.LastSeen, AgoMS: ms(max(e.Now.Sub(m.LastSeen), 0))}
		if e.Leader != nil && m.ID == e.Leader.ID {
			jm.Role = "leader"
			jm.CommandPID, _ = s.cmds.of(m.Host, m.PID)
			je.Leader = &jm
		}
		je.Members = append(je.Members, jm)
	}
	if l := e.Leader; l != nil && je.Leader == nil { // the leader's status document is missing or stale
		cmd, _ := s.cmds.of(l.Host, l.PID)
		je.Leader = &jsonMember{ID: l.ID, Role: "leader", Host: l.Host, PID: l.PID, CommandPID: cmd, Version: l.Version}
	}
	return s.enc.Encode(je)
}

func (s *jsonSink) done(sum statusSummary) error {
	if err := s.jsonPartitions(); err != nil {
		return err
	}
	js := jsonSummary{Kind: "summary", ServerTime: sum.now, UncertaintyMS: ms(sum.within),
		Locks: sum.Locks, Elections: sum.Elections, Partitions: s.shards.Len(), More: sum.More, Next: sum.Next,
		Database: sum.database, Collection: sum.collection, Elsewhere: sum.elsewhere}
	if sum.Order != 0 {
		js.Order = sum.Order.String()
	}
	return s.enc.Encode(js)
}
