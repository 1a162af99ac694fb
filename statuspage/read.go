package statuspage

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/partitions"
	"github.com/go-dsync/dsync/leader"
)

// What the page reads, all of it through the library: the keys and their
// queues (dsync.Client.List), and of an election who leads
// (leader.Election.Leader) and who stands by (leader.MemberStore.Members).
// The elections that are a partition's shards are gathered by
// internal/partitions, as dsync status gathers them (partitions.go).

// A Snapshot is one read of the store: what status.json serves.
type Snapshot struct {
	// Now is the store's time when the read ended (Config.Now), or the
	// local time when no clock of the store was given (Clock says which).
	Now   time.Time `json:"now"`
	Clock string    `json:"clock"` // "store" or "local"
	// Filter is what was read: Namespace and Prefix select the keys,
	// After the page's start.
	Namespace string     `json:"namespace"`
	Prefix    string     `json:"prefix"`
	After     string     `json:"after"`
	Locks     []Lock     `json:"locks"`
	Elections []Election `json:"elections"` // but the shards of Partitions
	// Partitions are the leader.Partitions whose shards are on this page.
	Partitions []Partition `json:"partitions"`
	// Revocations are every session an operator revoked (dsync revoke),
	// newest first, whatever the filter: who, when and why.
	Revocations []Revocation `json:"revocations"`
	// More: keys follow this page. Next is the After of the next page
	// where the store's order allows one (MongoDB's; FerretDB lists in
	// order of first use and cannot resume: narrow it with a prefix).
	More bool   `json:"more"`
	Next string `json:"next"`
	// Error says why the store could not be read; the rest is then empty.
	Error string `json:"error,omitempty"`
}

// A Lock is a Mutex, RWMutex, Semaphore or Once as the page shows it.
type Lock struct {
	Key  string `json:"key"`  // as stored
	Kind string `json:"kind"` // mutex, rwmutex, semaphore, once
	Name string `json:"name"` // as its user made it
	// State: held, read (readers hold), U/N (a Semaphore's units held of
	// its limit), done (a Once that ran to success), free.
	State   string  `json:"state"`
	Holders []Claim `json:"holders"` // in queue order
	Waiting []Claim `json:"waiting"` // in queue order
}

// A Claim is a holder or a waiter of a key.
type Claim struct {
	Token  uint64 `json:"token"`
	Owner  string `json:"owner"`
	Host   string `json:"host"`
	PID    int    `json:"pid"`
	Mode   string `json:"mode"`
	Weight int64  `json:"weight,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
	// QueuedAt and ExpiresAt are the store's times: when the claim
	// queued, and when its lease ends unless renewed. HeldForMS and
	// ExpiresInMS are measured from Snapshot.Now.
	QueuedAt    time.Time `json:"queuedAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
	HeldForMS   int64     `json:"heldForMs"`
	ExpiresInMS int64     `json:"expiresInMs"`
	// Session is the claim's process session; Revoked says that an
	// operator revoked it (its holder gives its holds up within one TTL,
	// and the claim stays until its lease has expired).
	Session string `json:"session"`
	Revoked bool   `json:"revoked,omitempty"`
}

// A Revocation is an operator's revoke of a session, as recorded in the
// store (driver.Revocation).
type Revocation struct {
	Session string    `json:"session"`
	By      string    `json:"by"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"` // store time
}

// An Election is an election as the page shows it.
type Election struct {
	Name string `json:"name"`
	// Leader is who leads; nil when nobody does.
	Leader *Leader `json:"leader"`
	// Members are the candidates seen within Config.Seen; none when no
	// MemberStore was given.
	Members []Member `json:"members"`
}

// A Leader is the leader of an election in its term.
type Leader struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Version     string    `json:"version"`
	Term        uint64    `json:"term"` // its fencing token
	Value       string    `json:"value"`
	Since       time.Time `json:"since"`
	HeldForMS   int64     `json:"heldForMs"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	ExpiresInMS int64     `json:"expiresInMs"`
}

// A Member is a candidate of an election.
type Member struct {
	ID         string    `json:"id"`
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	Version    string    `json:"version"`
	Leader     bool      `json:"leader"`
	LastSeen   time.Time `json:"lastSeen"`
	LastSeenMS int64     `json:"lastSeenAgoMs"`
}

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
	s := Snapshot{Namespace: q.namespace, Prefix: q.prefix, After: q.after, Locks: []Lock{}, Elections: []Election{}, Partitions: []Partition{}, Revocations: []Revocation{}}
	if err := h.readInto(ctx, q, &s); err != nil {
		return Snapshot{Namespace: q.namespace, Prefix: q.prefix, After: q.after, Locks: []Lock{}, Elections: []Election{},
			Partitions: []Partition{}, Revocations: []Revocation{}, Now: time.Now(), Clock: "local", Error: err.Error()}
	}
	return s
}

func (h *handler) readInto(ctx context.Context, q query, s *Snapshot) error {
	now, clock, err := h.now(ctx)
	if err != nil {
		return err
	}
	s.Now, s.Clock = now, clock
	revoked, err := h.readRevocations(ctx, s)
	if err != nil {
		return err
	}
	order, err := h.cfg.Client.ListOrder(ctx)
	if err != nil {
		return err
	}
	if q.after != "" && order != dsync.OrderBytes {
		return dsync.ErrAfterUnsupported
	}
	opts := dsync.ListOptions{Prefix: q.keyPrefix(), After: q.after, Limit: q.limit + 1}
	listed, last := 0, ""
	var shards partitions.Set[Election]
	defer func() { s.Partitions = partitionsOf(&shards) }()
	for ks, err := range h.cfg.Client.List(ctx, opts) {
		if err != nil {
			return err
		}
		if listed == q.limit {
			s.More = true
			if order == dsync.OrderBytes {
				s.Next = last
			}
			break
		}
		listed, last = listed+1, ks.Key
		kind, name := kindOf(ks.Key)
		if kind == "election" {
			e, err := h.readElection(ctx, name, now)
			if err != nil {
				return err
			}
			if !shards.Add(e.Name, e) {
				s.Elections = append(s.Elections, e)
			}
			continue
		}
		l, err := h.readLock(ctx, ks, kind, name, now, revoked)
		if err != nil {
			return err
		}
		s.Locks = append(s.Locks, l)
	}
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

func (h *handler) readLock(ctx context.Context, ks dsync.KeyState, kind, name string, now time.Time, revoked map[string]bool) (Lock, error) {
	l := Lock{Key: ks.Key, Kind: kind, Name: name, Holders: []Claim{}, Waiting: []Claim{}}
	var units int64
	for _, c := range ks.Queue {
		if c.Holds {
			l.Holders = append(l.Holders, claimOf(c, now, revoked))
			units += c.Weight
		} else {
			l.Waiting = append(l.Waiting, claimOf(c, now, revoked))
		}
	}
	switch {
	case len(l.Holders) > 0 && ks.Queue[0].Mode == driver.Shared:
		l.State = "read"
	case len(l.Holders) > 0 && ks.Queue[0].Mode == driver.Weighted:
		l.State = itoa(units) + "/" + itoa(ks.Queue[0].Limit)
	case len(l.Holders) > 0:
		l.State = "held"
	default:
		l.State = "free"
	}
	if kind == "once" && len(ks.Queue) == 0 {
		once, err := dsync.NewOnce(h.cfg.Client, name)
		if err != nil {
			return l, err
		}
		done, err := once.Done(ctx)
		if err != nil {
			return l, err
		}
		if done {
			l.State = "done"
		}
	}
	return l, nil
}

func claimOf(c dsync.ClaimInfo, now time.Time, revoked map[string]bool) Claim {
	return Claim{
		Session: c.Session, Revoked: revoked[c.Session],
		Token: c.Token, Owner: c.Owner, Host: c.Host, PID: c.PID,
		Mode: c.Mode.String(), Weight: c.Weight, Limit: c.Limit,
		QueuedAt: c.QueuedAt, ExpiresAt: c.ExpiresAt,
		HeldForMS: max(0, now.Sub(c.QueuedAt).Milliseconds()), ExpiresInMS: max(0, c.ExpiresAt.Sub(now).Milliseconds()),
	}
}

func (h *handler) readElection(ctx context.Context, name string, now time.Time) (Election, error) {
	e := Election{Name: name, Members: []Member{}}
	var opts []leader.Option
	if h.cfg.Members != nil {
		opts = append(opts, leader.WithMembers(h.cfg.Members))
	}
	watcher, err := leader.NewElection(h.cfg.Client, name, opts...) // campaigns never
	if err != nil {
		return e, err
	}
	defer watcher.Close()
	info, err := watcher.Leader(ctx)
	switch {
	case errors.Is(err, leader.ErrNoLeader):
	case err != nil:
		return e, err
	default:
		l := &Leader{ID: info.ID, Host: info.Host, PID: info.PID, Version: info.Version, Term: info.Token,
			Value: info.Value, Since: info.Since, HeldForMS: max(0, now.Sub(info.Since).Milliseconds())}
		q, err := h.cfg.Client.Queue(ctx, leader.LockKey(name))
		if err != nil {
			return e, err
		}
		for _, c := range q {
			if c.Token == info.Token {
				l.ExpiresAt, l.ExpiresInMS = c.ExpiresAt, max(0, c.ExpiresAt.Sub(now).Milliseconds())
			}
		}
		e.Leader = l
	}
	if h.cfg.Members == nil {
		return e, nil
	}
	ms, err := h.cfg.Members.Members(ctx, name, h.cfg.Seen)
	if err != nil {
		return e, err
	}
	for _, m := range ms {
		e.Members = append(e.Members, Member{ID: m.ID, Host: m.Host, PID: m.PID, Version: m.Version,
			Leader: m.Leader, LastSeen: m.LastSeen, LastSeenMS: max(0, now.Sub(m.LastSeen).Milliseconds())})
	}
	return e, nil
}

// kindOf returns the kind of the primitive that claims key and the name
// it was made with: each kind but the Mutex keeps its keys under a
// namespace of its own. A Mutex made with dsync.WithNamespace is a mutex
// shown by its key as stored.
func kindOf(key string) (kind, name string) {
	for _, ns := range []struct{ prefix, kind string }{
		{"dsync:rw/", "rwmutex"}, {"dsync:sem/", "semaphore"}, {"dsync:once/", "once"}, {leader.LockKey(""), "election"},
	} {
		if n, ok := strings.CutPrefix(key, ns.prefix); ok && n != "" {
			return ns.kind, n
		}
	}
	return "mutex", key
}

// readRevocations reads every revocation into s, newest first, and
// returns the revoked sessions.
func (h *handler) readRevocations(ctx context.Context, s *Snapshot) (map[string]bool, error) {
	rs, err := h.cfg.Client.Revocations(ctx)
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
