package driver

import (
	"context"
	"strconv"
	"time"
)

// The records of deadlock detection between lock sets: a set's note that
// it waits while it holds (Wait), and the record of a deadlock broken
// (Deadlock). Each is a document of its own under an ID that its content
// fixes (WaitID, DeadlockID), inserted once and never changed, by the set
// it names only. So each is safe whenever and however often it lands:
//
//   - late: a note says "set S, holding these claims, waited at this
//     claim"; once true it stays true, and a reader counts it only while
//     every claim it names is unended. A note N that lands after the
//     set's note N+1 is not its latest (LatestWait returns the highest N,
//     not the last stored);
//   - twice: the second insert is ErrExists, which the sender takes as
//     success; the first record stays, every field as it was;
//   - after the sender's later writes: the number N names one wait of the
//     set, never a later one.
//
// No rule of the protocol reads them to grant or end a claim: a claim
// holds or waits as the queue says, whatever the notes say. A store may
// delete them once they are older than a retention of its own.

// Wait is a lock set's note that it waits at one key while it holds
// others: the edges of the wait-for graph leave from it. A set records
// one per wait that lasts, numbered 1, 2, ... in the order of its waits.
type Wait struct {
	Set string // the waiting set's identity: the Waiter of its claims
	N   uint64 // the note's number in Set's notes, from 1
	// Key, Epoch and Nonce name the claim the set waits with (Key as
	// stored).
	Key   string
	Epoch uint64
	Nonce string
	// Holds are the claims the set holds while it waits. A set releases
	// none of them while this wait lasts.
	Holds []ClaimRef
	// Since is when the set's current holding began: the Sent of the
	// first claim it holds in it, kept across waits. Among the sets of a
	// deadlock, the one with the latest Since is the youngest.
	Since   time.Time
	Session string // the waiting process's session
	Host    string // the waiting process, shown to people
	PID     int
	At      time.Time // store time when it was sent (ServerTime().Latest)
}

// ClaimRef names one claim: its key as stored, its epoch and the nonce
// it was inserted with.
type ClaimRef struct {
	Key   string
	Epoch uint64
	Nonce string
}

// WaitID is the ID of set's note n: "w:<set>:<n>". n is its last part,
// in decimal, so two notes share an ID only if they share set and n.
func WaitID(set string, n uint64) string {
	return "w:" + set + ":" + strconv.FormatUint(n, 10)
}

// Deadlock is the record that a lock set broke a deadlock: it found a
// cycle of waits through itself, was the youngest of it, and gave up its
// wait of note N. Its ID is DeadlockID(Victim, N): a wait is given up
// once.
type Deadlock struct {
	Victim  string // the set that gave up its wait
	N       uint64 // the victim's note of the wait it gave up
	Cycle   []DeadlockEdge
	Session string // the victim's process
	Host    string
	PID     int
	At      time.Time // store time when it was sent (ServerTime().Latest)
}

// DeadlockEdge is one wait of a cycle: Set waits with its claim of Key
// and Epoch for the claim of HeldBy that holds Key, of epoch Token.
type DeadlockEdge struct {
	Set    string
	Key    string
	Epoch  uint64
	HeldBy string
	Token  uint64
}

// DeadlockID is the ID of the record of the deadlock victim broke by
// giving up the wait of its note n: "d:<victim>:<n>".
func DeadlockID(victim string, n uint64) string {
	return "d:" + victim + ":" + strconv.FormatUint(n, 10)
}

// WaitStore is what a store that can keep lock sets' wait notes provides
// (Roles.Waits).
type WaitStore interface {
	// PutWait records w with one insert of ID WaitID(w.Set, w.N), and
	// writes nothing else. It returns ErrExists if that ID exists: the
	// first note recorded stays. Of many puts of one ID, at most one
	// succeeds.
	PutWait(ctx context.Context, w Wait) error
	// LatestWait reads set's note of the highest N recorded; found is
	// false if set has none. It writes nothing.
	LatestWait(ctx context.Context, set string) (w Wait, found bool, err error)
	// ListWaits lists every note recorded and not yet deleted whose At
	// is at or after since, of every set, in no given order. It writes
	// nothing.
	ListWaits(ctx context.Context, since time.Time) ([]Wait, error)
}

// DeadlockStore is what a store that can keep the records of deadlocks
// broken provides (Roles.Deadlocks).
type DeadlockStore interface {
	// PutDeadlock records d with one insert of ID DeadlockID(d.Victim,
	// d.N), and writes nothing else. It returns ErrExists if that ID
	// exists: the first record stays.
	PutDeadlock(ctx context.Context, d Deadlock) error
	// ListDeadlocks lists every record not yet deleted whose At is at or
	// after since, in no given order. It writes nothing.
	ListDeadlocks(ctx context.Context, since time.Time) ([]Deadlock, error)
}
