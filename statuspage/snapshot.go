package statuspage

import "time"

// What status.json serves: one read of the store, in the shapes and
// names of its JSON. read.go fills them in.

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
// store (dsync.Revocation).
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
