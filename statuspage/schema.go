package statuspage

import "time"

// The schema of the status data, one for both of its readers: status.json
// serves a Snapshot, and `dsync status --json` prints a Record per line,
// made of the same types. JSON names and types are the same wherever the
// two say the same thing. Times are the store's (RFC 3339); durations are
// whole milliseconds (truncated) counted from the read's Now.
// docs/observability.md ("The status data as JSON") shows it whole.

// A Snapshot is one read of the store: what status.json serves. The
// Summary's fields are at its top level, beside what was read. Every
// list is present, empty when there is nothing in it.
type Snapshot struct {
	Summary
	Locks []Lock `json:"locks"`
	// Elections are the elections read, but a partition's shards, which
	// are in Partitions.
	Elections []Election `json:"elections"`
	// Partitions are the leader.Partitions whose shards were read.
	Partitions []Partition `json:"partitions"`
	// Revocations are every session an operator revoked (dsync revoke),
	// newest first, whatever the filter: who, when and why.
	Revocations []Revocation `json:"revocations"`
	// Stalls are every stall record the store keeps, newest first,
	// whatever the filter: which hold stalled, whose and when.
	Stalls []Stall `json:"stalls"`
	// SetWaits are the waits of lock sets among the locks read, in their
	// order: who waits for whom. Deadlocks are the deadlocks between lock
	// sets broken in the last day, newest first, whatever the filter.
	SetWaits  []SetWait  `json:"setWaits"`
	Deadlocks []Deadlock `json:"deadlocks"`
	// Outages are the outages of the store ridden through in the last
	// day (OutagesShown), a record per session that kept holds, newest
	// first, whatever the filter.
	Outages []Outage `json:"outages"`
}

// A Summary says what one read of the store was. It says when, by which
// clock, what it selected, where it ended and, where the reader knows it,
// which database it read. It is the top of a Snapshot and the last line of
// dsync status --json.
type Summary struct {
	// Now is the store's time when the read ended, or the local time
	// when the reader had no clock of the store (Clock says which). Every
	// duration of the read is counted from it.
	Now   time.Time `json:"now"`
	Clock string    `json:"clock"` // "store" or "local"
	// UncertaintyMS bounds the error of Now, where the reader measured
	// the store's clock (dsync status: rounded up); absent where not.
	UncertaintyMS int64 `json:"uncertaintyMs,omitempty"`
	// Namespace and Prefix select the keys read (Namespace: the page's
	// filter; dsync status has none), After is where the read began.
	Namespace string `json:"namespace"`
	Prefix    string `json:"prefix"`
	After     string `json:"after"`
	// Order is the store's order of keys: "bytes" (MongoDB) or "first
	// use" (FerretDB, which cannot resume after a key); absent when the
	// store could not be read.
	Order string `json:"order,omitempty"`
	// More: keys follow the last one read. Next is the After that reads
	// them, where the order allows one ("" where not: narrow the read
	// with a prefix).
	More bool   `json:"more"`
	Next string `json:"next"`
	// Error says why the store could not be read (status.json answers
	// 503); the lists are then empty. dsync status says so on stderr and
	// exits 1, without a summary line.
	Error string `json:"error,omitempty"`
	// Database and Collection are where the read was, where the reader
	// knows it (dsync status). When nothing was read there, Elsewhere
	// names the server's other databases that have such a collection (if
	// the user may list them).
	Database   string   `json:"database,omitempty"`
	Collection string   `json:"collection,omitempty"`
	Elsewhere  []string `json:"elsewhere,omitempty"`
	// NoWaitNotes and NoDeadlockRecords: the store keeps no lock sets'
	// wait notes (a SetWait is never Noted), or no records of deadlocks
	// broken (none is listed; without notes, none is detected either).
	NoWaitNotes       bool `json:"noWaitNotes,omitempty"`
	NoDeadlockRecords bool `json:"noDeadlockRecords,omitempty"`
}

// A Record is one line of dsync status --json. Exactly one field is set,
// and its name says what the line is. The locks and the elections come as
// they are read, in the store's order. Then come the partitions whose
// shards were read, the revocations, the stall records, the lock sets'
// waits, the deadlocks broken, the outages ridden through and, last, the
// summary. A list without a summary line did not end.
type Record struct {
	Lock       *Lock       `json:"lock,omitempty"`
	Election   *Election   `json:"election,omitempty"`
	Partition  *Partition  `json:"partition,omitempty"`
	Revocation *Revocation `json:"revocation,omitempty"`
	Stall      *Stall      `json:"stall,omitempty"`
	SetWait    *SetWait    `json:"setWait,omitempty"`
	Deadlock   *Deadlock   `json:"deadlock,omitempty"`
	Outage     *Outage     `json:"outage,omitempty"`
	Summary    *Summary    `json:"summary,omitempty"`
}

// A Lock is a Mutex, RWMutex, Semaphore or Once: its key and queue.
type Lock struct {
	// Key is the key as stored: a Semaphore "encode" claims the key
	// "dsync:sem/encode". Kind is the primitive's (mutex, rwmutex,
	// semaphore, once), Name the name its user made it with; a Mutex
	// made with dsync.WithNamespace is named by its key.
	Key  string `json:"key"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// State: held (by a Mutex, a writer or a Once's run), read (readers
	// hold it), U/N (a Semaphore's units held of its limit), done (a
	// Once that ran to success), free.
	State string `json:"state"`
	// Holders are the claims that hold (one, or several readers or
	// Semaphore holders), Waiting the claims queued behind them, both in
	// queue order: the first holder's Token is the lock's fencing token.
	Holders []Claim `json:"holders"`
	Waiting []Claim `json:"waiting"`
}

// A Claim is a holder or a waiter of a key.
type Claim struct {
	Token uint64 `json:"token"` // its fencing token
	Owner string `json:"owner"` // the Mutex (or candidate) that claimed
	Host  string `json:"host"`  // of the claiming process
	PID   int    `json:"pid"`
	// CommandPID is the command that dsync runs under the claim, where
	// the reader finds it (dsync status, for claims of its own host);
	// absent where not.
	CommandPID int `json:"commandPid,omitempty"`
	// Mode: exclusive (a Mutex, a writer, a Once's run), shared (a
	// reader) or weighted (a Semaphore's: Weight units of its Limit).
	Mode   string `json:"mode"`
	Weight int64  `json:"weight,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
	// QueuedAt is when the claim queued (the latest store time it can
	// have been sent); ExpiresAt when its session's lease ends unless
	// renewed. HeldForMS is the time since QueuedAt (a holder
	// that waited counts its wait; a waiter, how long it waits),
	// ExpiresInMS the time left, 0 once the lease has expired.
	QueuedAt    time.Time `json:"queuedAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
	HeldForMS   int64     `json:"heldForMs"`
	ExpiresInMS int64     `json:"expiresInMs"`
	// Session is the claim's process session; Revoked says that an
	// operator revoked it (its holder gives its holds up within one TTL,
	// and the claim stays until its lease has expired).
	Session string `json:"session"`
	Revoked bool   `json:"revoked,omitempty"`
	// Set is the lock set (dsync/lockset) the claim is a member of, as
	// SetWait's; absent for a claim of a single primitive.
	Set string `json:"set,omitempty"`
}

// A Revocation is an operator's revoke of a session (dsync revoke), as stored.
type Revocation struct {
	Session string    `json:"session"`
	By      string    `json:"by"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"` // store time
}

// A Stall is the record of a hold that stalled (Reader.Stalls). Its
// work reported no progress within its progress deadline, so its holder
// gave the hold up and released the claim.
type Stall struct {
	// Key is the key as stored, Kind and Name the primitive's, as a
	// Lock's.
	Key  string `json:"key"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Token is the stalled claim's fencing token; Owner, Host, PID and
	// Session are its holder's, Nonce the claim's.
	Token   uint64 `json:"token"`
	Owner   string `json:"owner"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Session string `json:"session"`
	Nonce   string `json:"nonce"`
	// Since is when the hold began and LastProgress when its work last
	// reported progress, each absent where the holder did not say; At is
	// when the holder sent the record. Store times: Since and
	// LastProgress are counted back from At by the holder's clock.
	Since        time.Time `json:"since,omitzero"`
	LastProgress time.Time `json:"lastProgress,omitzero"`
	At           time.Time `json:"at"`
}

// An Election is a leader.Election: who leads, and who stands by.
type Election struct {
	Name string `json:"name"`
	Key  string `json:"key"` // of its lease: "dsync:election/NAME"
	// Leader is who leads; null when nobody does.
	Leader *Leader `json:"leader"`
	// Members are the candidates seen within the reader's window (the
	// page's Config.Seen, dsync status --seen), the leader among them;
	// none without a member store.
	Members []Member `json:"members"`
}

// A Leader is an election's leader in its term, or a partition shard's owner.
type Leader struct {
	ID         string `json:"id"` // the candidate's
	Host       string `json:"host"`
	PID        int    `json:"pid"`
	CommandPID int    `json:"commandPid,omitempty"` // as in Claim
	// Version and Value are what it advertises (leader.WithVersion,
	// WithValue and Proclaim); empty without a member store.
	Version string `json:"version"`
	Value   string `json:"value"`
	// Term is its term's fencing token. Since is when the term's claim
	// queued, HeldForMS the time since.
	Term      uint64    `json:"term"`
	Since     time.Time `json:"since"`
	HeldForMS int64     `json:"heldForMs"`
	// ExpiresAt is when the term's lease ends unless renewed, absent when
	// the term ended as it was read; ExpiresInMS the time left, 0 once
	// expired or when absent.
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	ExpiresInMS int64     `json:"expiresInMs"`
}

// A Member is a candidate of an election.
type Member struct {
	ID      string `json:"id"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// Priority is its leader.WithPriority (0 when it set none).
	Priority int `json:"priority"`
	// Leader: this member is the Election's Leader (the same ID).
	Leader bool `json:"leader"`
	// LastSeen is its last heartbeat, LastSeenMS the time since.
	LastSeen   time.Time `json:"lastSeen"`
	LastSeenMS int64     `json:"lastSeenAgoMs"`
}

// A Partition is a leader.Partition: its shards read, in order. Shard I
// is the election "NAME#I", shown here rather than among the elections;
// its owner is that election's leader. Any election named like a shard
// ("x#3") is shown as one: nothing in the store tells them apart.
type Partition struct {
	Name   string  `json:"name"`
	Shards []Shard `json:"shards"`
	// Drained are the members an operator drained (dsync drain,
	// operator.Drain), ordered by ID: they are assigned no shard. Empty
	// where none is, or the member store keeps no drains.
	Drained []DrainedMember `json:"drained"`
}

// A DrainedMember is a Partition member an operator drained, as its
// latest drain directive says.
type DrainedMember struct {
	ID string `json:"id"` // the member's (leader.Partition.ID)
	// Host and PID are the member's where the reader saw its status
	// within its window (the page's Config.Seen, dsync status --seen);
	// absent where not: it stopped, or is cut off.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// By, Reason and At are the drain's: who drained it, why, and when
	// (store time).
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// A Shard is one shard of a partition.
type Shard struct {
	Shard    int    `json:"shard"`
	Election string `json:"election"` // "NAME#I"
	Key      string `json:"key"`      // of its lease: "dsync:election/NAME#I"
	// Owner is the leader of the shard's election (its Term is the
	// fencing token); null when nobody owns the shard.
	Owner *Leader `json:"owner"`
}

// A SetWait is a lock set's (dsync/lockset) wait among the keys read: its
// member's claim of Key waits for the claims HeldBy (Reader.SetRecords,
// SetRecords.WaitsOf).
type SetWait struct {
	// Set is the waiting set's identity (the claims of one Lock call of
	// it share it).
	Set string `json:"set"`
	// Key, Kind and Name are the key it waits at, as a Lock's; Token is
	// its waiting claim's, Host and PID its process's; WaitingMS the time
	// since the claim queued.
	Key       string `json:"key"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Token     uint64 `json:"token"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	WaitingMS int64  `json:"waitingMs"`
	// Noted: the set's latest wait note is of this wait, and says what
	// the set holds while it waits (Holds: keys as stored) and since when
	// (Since, store time). A set notes a wait once it lasted its deadlock
	// timeout while it held something: not noted, the set has waited less
	// long, holds nothing, has detection off, or the store keeps no notes
	// (then the Summary's noWaitNotes says so).
	Noted bool      `json:"noted"`
	Holds []string  `json:"holds"`
	Since time.Time `json:"since,omitzero"`
	// HeldBy are the claims it waits for: its key's holders.
	HeldBy []SetHolder `json:"heldBy"`
}

// A SetHolder is a holder a SetWait waits for.
type SetHolder struct {
	Set   string `json:"set,omitempty"` // its lock set's; absent for a single lock
	Token uint64 `json:"token"`
	Owner string `json:"owner"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
}

// A Deadlock is the record of a deadlock between lock sets that one of
// them broke: a cycle of waits, each set waiting for the next, of which
// the youngest set, Victim, gave up its wait.
type Deadlock struct {
	Victim  string         `json:"victim"`
	Host    string         `json:"host"` // the victim's process
	PID     int            `json:"pid"`
	Session string         `json:"session"`
	At      time.Time      `json:"at"` // store time when it was recorded
	Cycle   []DeadlockEdge `json:"cycle"`
}

// A DeadlockEdge is one wait of a Deadlock's cycle: Set waited with its
// claim of Key (Token) for HeldBy's claim that held it (HeldToken).
type DeadlockEdge struct {
	Set       string `json:"set"`
	Key       string `json:"key"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Token     uint64 `json:"token"`
	HeldBy    string `json:"heldBy"`
	HeldToken uint64 `json:"heldToken"`
}
