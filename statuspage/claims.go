package statuspage

import (
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// What Reader's reads of a key's queue and of the store's directory
// return: the claims, the keys, how a claim shares its key and the order
// of a listing.

// ClaimInfo is a claim of a key's queue that has not ended.
type ClaimInfo struct {
	Key     string // the key as stored: a namespaced key begins with "dsync:"
	Token   uint64 // the claim's epoch: its fencing token once it holds
	Owner   string // the Mutex (or candidate) that claimed
	Session string
	Nonce   string
	Host    string // the claiming process
	PID     int
	// QueuedAt is the latest possible store time when the claim was sent.
	// ExpiresAt is its session's expiry as read (store time), unless
	// renewed.
	QueuedAt  time.Time
	ExpiresAt time.Time
	// Mode is how the claim shares its key. Exclusive is a Mutex's or a
	// writer's, shared a reader's, weighted a Semaphore's. Weight and Limit
	// are a weighted claim's units and limit.
	Mode   Mode
	Weight int64
	Limit  int64
	// Holds: the claim holds by the grant rule, or is about to. The rule is
	// applied given the live claims before it: readers share, weighted
	// claims up to their limit. The others wait.
	Holds bool
	// Expired: the claim's session had expired (ExpiresAt) by the store's
	// time as the read knew it. So the claim no longer holds, and the next
	// process that claims or waits on the key ends it. Until then it stays
	// in the queue, neither holding nor waiting, and the claims behind it
	// hold or wait as if it had ended. A read never ends it itself: its
	// clock may be off the one that orders the writes (behind a mongos,
	// before the Client's first claim, it is the router's), so Expired is
	// a report, off by as much. It follows the rule claimers end claims by:
	// a session found missing, or expired without its first document (its
	// collection may have been dropped, and a late write brought back an
	// old expiry while its owner holds on), is not Expired, whatever
	// ExpiresAt says: a claimer ends its claim only once it stayed missing
	// for the claim's TTL, which one read cannot see. Once a read of a
	// dsync.Client that has claimed (whose clock is then the one the writes are
	// judged by) found a claim Expired, its later reads report it Expired
	// too, for two of the claim's TTLs past the expiry found (the highest
	// ExpiresAt of the reads that reported it Expired, whichever of its
	// session's keys they read: further than a renewal sent in time can
	// raise it; up to 4,096 sessions remembered), even if a renewal its
	// owner sent before losing it lands late and raises the session's
	// stored expiry: the owner stopped relying on it, and the next claimer
	// ends it (a reader that never saw it expired, or read by another
	// clock, reads it live until that raised expiry, or until it is ended).
	Expired bool
	// Set is the identity of the lock set (dsync/lockset) whose member
	// made the claim, one per Lock call of the set; "" for a claim of a
	// single primitive.
	Set string
}

// claimOfRead is c, as dsync read it, in this package's terms.
func claimOfRead(c clienthook.Claim) ClaimInfo {
	return ClaimInfo{Key: c.Key, Token: c.Token, Owner: c.Owner, Session: c.Session, Nonce: c.Nonce, Host: c.Host, PID: c.PID,
		QueuedAt: c.QueuedAt, ExpiresAt: c.ExpiresAt, Mode: Mode(c.Mode), Weight: c.Weight, Limit: c.Limit, Holds: c.Holds, Expired: c.Expired, Set: c.Waiter}
}

// claimsOfRead is claimOfRead of each of q.
func claimsOfRead(q []clienthook.Claim) []ClaimInfo {
	if q == nil {
		return nil
	}
	out := make([]ClaimInfo, len(q))
	for i, c := range q {
		out[i] = claimOfRead(c)
	}
	return out
}

// Mode is how a claim shares its key (ClaimInfo.Mode).
type Mode int

// The modes of claims: the driver's, by number (TestModesMatchTheDriver).
const (
	// ModeExclusive: a Mutex's, an RWMutex writer's, an election's lease.
	// It holds when every claim before it has ended.
	ModeExclusive = Mode(driver.Exclusive)
	// ModeShared: an RWMutex reader's. It holds when every exclusive
	// claim before it has ended.
	ModeShared = Mode(driver.Shared)
	// ModeWeighted: a Semaphore's (and a Once's). It holds when the
	// weights of the live claims before it, and its own, are at most its
	// limit.
	ModeWeighted = Mode(driver.Weighted)
)

// String names the mode: exclusive, shared or weighted.
func (m Mode) String() string { return driver.Mode(m).String() }

// KeyOrder is the order in which a store lists its keys (Reader.List).
type KeyOrder int

// The orders of listings: the driver's, by number.
const (
	// OrderBytes: increasing order of the keys' bytes (MongoDB, and the
	// in-memory store). A listing can resume after any key.
	OrderBytes = KeyOrder(driver.OrderBytes)
	// OrderFirstUse: the order in which keys were first claimed. It does
	// not change as keys are added (FerretDB: any other order would cost it
	// a read of every key). A listing cannot resume after a key
	// (ErrAfterUnsupported); it streams instead.
	OrderFirstUse = KeyOrder(driver.OrderFirstUse)
)

// String names the order: bytes, first use.
func (o KeyOrder) String() string { return driver.KeyOrder(o).String() }

// ErrAfterUnsupported is what a listing reports when it cannot resume
// after a key (ListOptions.After, Selection.After): before it reads any
// key, on a store that lists in OrderFirstUse. It is
// driver.ErrAfterUnsupported.
var ErrAfterUnsupported = driver.ErrAfterUnsupported

// ListOptions selects the keys Reader.List lists.
type ListOptions struct {
	// Prefix: only keys that begin with it; "" lists every key.
	Prefix string
	// After: only keys after it in the store's order, which must be
	// OrderBytes; "" starts at the first key. Passing the last key of a
	// page gives the next page.
	After string
	// Limit: at most this many keys; 0 lists them all. It must not be
	// negative.
	Limit int
}

// KeyState is a key of the store and its queue, as Reader.List reads them.
type KeyState struct {
	// Key is the key as stored: a namespaced key, such as an election's
	// lease, begins with "dsync:".
	Key string
	// Queue is what Reader.Queue returns for Key: the claims that have not
	// ended. The one that holds (or is about to) comes first. It is empty
	// when nothing holds or waits for the key: the key was used, and is
	// free.
	Queue []ClaimInfo
}
