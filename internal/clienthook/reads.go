package clienthook

import (
	"context"
	"iter"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// ClientReads is a Reads[*dsync.Client]: the reads of a Client's store
// for people, and its compaction, which package statuspage presents as
// its Reader and package leader reads its election's queue with. They
// need the Client's engine and unexported state, so dsync implements
// them and sets ClientReads as it is initialized, as it does Elections;
// it exports none of them, so that the lock package's API is only the
// locks'.
var ClientReads any

// Reads are a Client's reads, for the Client type C (which this package
// cannot name). Each is what statuspage's Reader method of its name
// documents; Revocations and Stalls return nil on a store that keeps no
// such records.
type Reads[C any] struct {
	Queue       func(c C, ctx context.Context, key string) ([]Claim, error)
	List        func(c C, ctx context.Context, q driver.KeyQuery) iter.Seq2[KeyState, error]
	HasKey      func(c C, ctx context.Context, key string) (bool, error)
	ListOrder   func(c C, ctx context.Context) (driver.KeyOrder, error)
	Revocations func(c C, ctx context.Context) ([]driver.Revocation, error)
	Stalls      func(c C, ctx context.Context) ([]driver.Stall, error)
	Compact     func(c C, ctx context.Context, idle time.Duration) (int64, error)
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
	Mode                  driver.Mode
	Weight, Limit         int64
	Holds, Expired        bool
}

// A KeyState is a key and its queue, as a listing reads them.
type KeyState struct {
	Key   string
	Queue []Claim
}
