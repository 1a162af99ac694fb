package clienthook

import (
	"context"
	"iter"
	"time"
)

// ClientReads is a Reads[*dsync.Client, driver.Revocation, driver.Stall]:
// the reads of a Client's store
// for people, and its compaction, which package statuspage presents as
// its Reader and package leader reads its election's queue with. They
// need the Client's engine and unexported state, so dsync implements
// them and sets ClientReads as it is initialized, as it does Elections;
// it exports none of them, so that the lock package's API is only the
// locks'.
var ClientReads any

// Reads are a Client's reads, for the Client type C and the driver's
// records of revocations R and of stalls S (which this package cannot
// name). Each is what statuspage's Reader method of its name documents;
// Revocations and Stalls return nil on a store that keeps no such
// records. ListOrder returns a driver.KeyOrder, as an int.
type Reads[C, R, S any] struct {
	Queue       func(c C, ctx context.Context, key string) ([]Claim, error)
	List        func(c C, ctx context.Context, q KeyQuery) iter.Seq2[KeyState, error]
	HasKey      func(c C, ctx context.Context, key string) (bool, error)
	ListOrder   func(c C, ctx context.Context) (int, error)
	Revocations func(c C, ctx context.Context) ([]R, error)
	Stalls      func(c C, ctx context.Context) ([]S, error)
	Compact     func(c C, ctx context.Context, idle time.Duration) (int64, error)
	// Roles is the store's driver.Roles, for the lock sets' wait notes
	// and deadlock records (Waits, Deadlocks) that statuspage reads.
	Roles func(c C) any
}

// KeyQuery selects the keys a listing reads: a driver.KeyQuery's fields.
type KeyQuery struct {
	Prefix, After string
	Limit         int
}

// A Claim is a claim of a key's queue that has not ended, as read; see
// statuspage.ClaimInfo, which has the same fields.
type Claim struct {
	Key                   string
	Token                 uint64
	Owner, Session, Nonce string
	Host                  string
	PID                   int
	QueuedAt, ExpiresAt   time.Time
	Mode                  int // a driver.Mode
	Weight, Limit         int64
	Holds, Expired        bool
	Waiter                string // the lock set it is a member of (driver.Doc.Waiter)
}

// A KeyState is a key and its queue, as a listing reads them.
type KeyState struct {
	Key   string
	Queue []Claim
}
