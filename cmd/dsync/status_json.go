//go:build unix

package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// The JSON of dsync status --json. Times are the server's, durations in
// milliseconds.
type (
	jsonStatus struct {
		ServerTime    time.Time      `json:"serverTime"`
		UncertaintyMS float64        `json:"uncertaintyMs"`
		Locks         []jsonLock     `json:"locks"`
		Elections     []jsonElection `json:"elections"`
	}
	jsonLock struct {
		Name  string `json:"name"`  // the key as stored
		State string `json:"state"` // held, free
		Token uint64 `json:"token"` // the holder's; 0 when free
		// Holder is who holds it; null when free.
		Holder *jsonHolder `json:"holder"`
		// Waiting counts the live claims queued behind the holder (0
		// when free).
		Waiting int `json:"waiting"`
	}
	jsonHolder struct {
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
		Name    string       `json:"name"`
		Term    uint64       `json:"term"`            // of the current leader; 0 when nobody leads
		Leader  *jsonMember  `json:"leader"`          // null when nobody leads
		Members []jsonMember `json:"members"`         // seen within --seen, the leader included
		Lease   *jsonHolder  `json:"lease,omitempty"` // the leader's lease, when someone leads
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
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (st *status) holder(c *dsync.ClaimInfo) *jsonHolder {
	return &jsonHolder{Host: c.Host, PID: c.PID, CommandPID: st.commands[c.PID], AcquiredAt: c.QueuedAt, ExpiresAt: c.ExpiresAt,
		HeldForMS: ms(max(st.now.Sub(c.QueuedAt), 0)), ExpiresInMS: ms(max(c.ExpiresAt.Sub(st.now), 0))}
}

func (st *status) writeJSON(w io.Writer) error {
	out := jsonStatus{ServerTime: st.now, UncertaintyMS: ms(st.within), Locks: []jsonLock{}, Elections: []jsonElection{}}
	for _, ls := range st.locks {
		l := jsonLock{Name: ls.key, State: ls.state(), Waiting: ls.waiting}
		if ls.holder != nil {
			l.Token, l.Holder = ls.holder.Token, st.holder(ls.holder)
		}
		out.Locks = append(out.Locks, l)
	}
	for _, e := range st.elections {
		out.Elections = append(out.Elections, st.jsonElection(e))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (st *status) jsonElection(e election) jsonElection {
	je := jsonElection{Name: e.name, Members: []jsonMember{}}
	if e.leader != nil {
		je.Term = e.leader.Token
	}
	if e.lease != nil {
		je.Lease = st.holder(e.lease)
	}
	for _, m := range e.members {
		jm := jsonMember{ID: m.ID, Role: "standby", Host: m.Host, PID: m.PID, Version: m.Version,
			LastSeen: m.LastSeen, AgoMS: ms(max(st.now.Sub(m.LastSeen), 0))}
		if e.leader != nil && m.ID == e.leader.ID {
			jm.Role, jm.CommandPID = "leader", st.commands[m.PID]
			je.Leader = &jm
		}
		je.Members = append(je.Members, jm)
	}
	if l := e.leader; l != nil && je.Leader == nil { // the leader's status document is missing or stale
		je.Leader = &jsonMember{ID: l.ID, Role: "leader", Host: l.Host, PID: l.PID, CommandPID: st.commands[l.PID], Version: l.Version}
	}
	return je
}
