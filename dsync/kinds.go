package dsync

import "github.com/go-dsync/dsync/dsync/driver"

// What a Client's reads report in terms of their own, not the driver's:
// how a claim shares its key (ClaimInfo.Mode), the order of a listing
// (ListOrder).

// Mode is how a claim shares its key (ClaimInfo.Mode).
type Mode int

// The modes of claims.
const (
	// ModeExclusive: a Mutex's, an RWMutex writer's, an election's lease.
	// It holds when every claim before it has ended.
	ModeExclusive Mode = iota
	// ModeShared: an RWMutex reader's. It holds when every exclusive
	// claim before it has ended.
	ModeShared
	// ModeWeighted: a Semaphore's (and a Once's). It holds when the
	// weights of the live claims before it, and its own, are at most its
	// limit.
	ModeWeighted
)

// String names the mode: exclusive, shared or weighted. These are the
// driver's names; the numbers are the driver's too
// (TestModesMatchTheDriver).
func (m Mode) String() string { return driver.Mode(m).String() }

// modeOf is the Mode of a stored claim's mode.
func modeOf(m driver.Mode) Mode {
	switch m {
	case driver.Shared:
		return ModeShared
	case driver.Weighted:
		return ModeWeighted
	}
	return ModeExclusive
}

// KeyOrder is the order in which a store lists its keys (List).
type KeyOrder int

// The orders of listings.
const (
	// OrderBytes: increasing order of the keys' bytes (MongoDB, and the
	// in-memory store). A listing can resume after any key.
	OrderBytes KeyOrder = iota + 1
	// OrderFirstUse: the order in which keys were first claimed. It does
	// not change as keys are added (FerretDB: any other order would cost it
	// a read of every key). A listing cannot resume after a key
	// (ErrAfterUnsupported); it streams instead.
	OrderFirstUse
)

// String names the order: bytes, first use.
func (o KeyOrder) String() string { return driver.KeyOrder(o).String() }

// orderOf is the KeyOrder of a store's order: the same number
// (TestKeyOrdersMatchTheDriver).
func orderOf(o driver.KeyOrder) KeyOrder { return KeyOrder(o) }
