package statuspage

import (
	"context"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/partitions"
	"github.com/go-dsync/dsync/internal/statusread"
	"github.com/go-dsync/dsync/leader"
)

// What the page reads: the store through internal/statusread, the reader
// it shares with dsync status, so that both show the same store alike.
// This file turns what it reads into a Snapshot (schema.go), every time
// counted from the Snapshot's Now; the elections that are a partition's
// shards are gathered by internal/partitions (partitions.go).

// A query selects what one read shows.
type query struct {
	namespace, prefix, after string
	limit                    int
}

// keyPrefix is the stored-key prefix the query selects: a namespace NS
// is the keys "dsync:NS/..." (rw, sem, once, election, or one of
// dsync.WithNamespace).
func (q query) keyPrefix() string {
	if q.namespace == "" {
		return q.prefix
	}
	return "dsync:" + q.namespace + "/" + q.prefix
}

// read reads one page of the store that q selects.
func (h *handler) read(ctx context.Context, q query) Snapshot {
	empty := func(sum Summary) Snapshot {
		return Snapshot{Summary: sum, Locks: []Lock{}, Elections: []Election{}, Partitions: []Partition{}, Revocations: []Revocation{}}
	}
	s := empty(Summary{Namespace: q.namespace, Prefix: q.prefix, After: q.after})
	if err := h.readInto(ctx, q, &s); err != nil {
		return empty(Summary{Namespace: q.namespace, Prefix: q.prefix, After: q.after, Now: time.Now(), Clock: "local", Error: err.Error()})
	}
	return s
}

func (h *handler) readInto(ctx context.Context, q query, s *Snapshot) error {
	now, clock, err := h.now(ctx)
	if err != nil {
		return err
	}
	s.Now, s.Clock = now, clock
	r := &statusread.Reader{Client: h.cfg.Client, Members: h.cfg.Members, Seen: h.cfg.Seen, Now: func() time.Time { return now }}
	revoked, err := readRevocations(ctx, r, s)
	if err != nil {
		return err
	}
	out := &snapshotSink{s: s, revoked: revoked}
	defer func() { s.Partitions = partitionsOf(&out.shards) }()
	listed, err := r.List(ctx, statusread.Selection{Prefix: q.keyPrefix(), After: q.after, Limit: q.limit}, out)
	if err != nil {
		return err
	}
	s.Order, s.More, s.Next = listed.Order.String(), listed.More, listed.Next
	return nil
}

// now is the store's time (Config.Now), or the local time.
func (h *handler) now(ctx context.Context) (time.Time, string, error) {
	if h.cfg.Now == nil {
		return time.Now(), "local", nil
	}
	t, err := h.cfg.Now(ctx)
	return t, "store", err
}

// A snapshotSink puts the locks and the elections read into s, and the
// elections that are a partition's shards into shards.
type snapshotSink struct {
	s       *Snapshot
	revoked map[string]bool // the sessions operators revoked
	shards  partitions.Set[Election]
}

func (o *snapshotSink) Lock(rl statusread.Lock) error {
	o.s.Locks = append(o.s.Locks, lockOf(rl, o.revoked))
	return nil
}

func (o *snapshotSink) Election(re statusread.Election) error {
	e := electionOf(re)
	if !o.shards.Add(e.Name, e) {
		o.s.Elections = append(o.s.Elections, e)
	}
	return nil
}

// lockOf is rl as the schema shows it, marking the claims of the
// revoked sessions.
func lockOf(rl statusread.Lock, revoked map[string]bool) Lock {
	l := Lock{Key: rl.Key, Kind: rl.Kind, Name: rl.Name, State: rl.State(), Holders: []Claim{}, Waiting: []Claim{}}
	for _, c := range rl.Holders {
		l.Holders = append(l.Holders, claimOf(c, rl.Now, revoked))
	}
	for _, c := range rl.Waiting {
		l.Waiting = append(l.Waiting, claimOf(c, rl.Now, revoked))
	}
	return l
}

func claimOf(c dsync.ClaimInfo, now time.Time, revoked map[string]bool) Claim {
	return Claim{
		Token: c.Token, Owner: c.Owner, Host: c.Host, PID: c.PID,
		Mode: c.Mode.String(), Weight: c.Weight, Limit: c.Limit,
		QueuedAt: c.QueuedAt, ExpiresAt: c.ExpiresAt, HeldForMS: millis(c.QueuedAt, now), ExpiresInMS: millis(now, c.ExpiresAt),
		Session: c.Session, Revoked: revoked[c.Session],
	}
}

// electionOf is re as the schema shows it.
func electionOf(re statusread.Election) Election {
	now := re.Now
	e := Election{Name: re.Name, Key: leader.LockKey(re.Name), Members: []Member{}}
	if info := re.Leader; info != nil {
		e.Leader = &Leader{ID: info.ID, Host: info.Host, PID: info.PID, Version: info.Version, Value: info.Value,
			Term: info.Token, Since: info.Since, HeldForMS: millis(info.Since, now)}
		if c := re.Lease; c != nil {
			e.Leader.ExpiresAt, e.Leader.ExpiresInMS = c.ExpiresAt, millis(now, c.ExpiresAt)
		}
	}
	for _, m := range re.Members {
		e.Members = append(e.Members, Member{ID: m.ID, Host: m.Host, PID: m.PID, Version: m.Version,
			Leader: e.Leader != nil && m.ID == e.Leader.ID, LastSeen: m.LastSeen, LastSeenMS: millis(m.LastSeen, now)})
	}
	return e
}

// millis is the whole milliseconds from a to b: 0 if b is not after a.
func millis(a, b time.Time) int64 { return max(0, b.Sub(a).Milliseconds()) }

// readRevocations reads every revocation into s, newest first, and
// returns the revoked sessions.
func readRevocations(ctx context.Context, r *statusread.Reader, s *Snapshot) (map[string]bool, error) {
	rs, err := r.Revocations(ctx)
	if err != nil {
		return nil, err
	}
	revoked := make(map[string]bool, len(rs))
	for _, r := range rs {
		revoked[r.Session] = true
		s.Revocations = append(s.Revocations, Revocation{Session: r.Session, By: r.By, Reason: r.Reason, At: r.At})
	}
	slices.SortFunc(s.Revocations, func(a, b Revocation) int { return b.At.Compare(a.At) })
	return revoked, nil
}
