package dsync

import (
	"fmt"

	"github.com/go-dsync/dsync/internal/chain"
)

// claimRef is one place in a key's queue: one epoch, claimed by Owner in
// Session. Once it holds, Token is the hold's fencing token: it strictly
// increases with each hold of Key and is never reused.
type claimRef struct {
	Key     string // as stored (namespaced keys begin with "dsync:")
	Owner   string
	Session string
	Token   uint64
	// Nonce is unique to the insert that made the claim; an end marker
	// ends only the claim with its nonce.
	Nonce string
	Terms chain.Terms // how it shares the key
	// Below: every lower claim had ended when it began to hold (see
	// chain.Claim.Below).
	Below bool
	// Seg is the segment of the key's queue the claim belongs to (see
	// internal/chain), and History the store's history its segment was
	// learnt in (chain.Claim.History): a walk of the claim checks it.
	Seg     uint64
	History string
}

// resume is the engine's claim for c.
func (c claimRef) resume() *chain.Claim {
	cc := chain.Resume(c.Key, c.Owner, c.Session, c.Nonce, c.Token, c.Seg, c.Terms)
	cc.Below, cc.History = c.Below, c.History
	return cc
}

// HeldError is what a try meets (TryLockContext, TryRLockContext,
// TryAcquireContext) when another claim holds the key or waits for it
// ahead, or when another goroutine of this process holds or is acquiring
// the same Mutex (or the same RWMutex's write lock). errors.Is(err,
// ErrHeld) reports true for it.
type HeldError struct {
	Key   string
	Owner string // the current holder or first waiter, if known
	Token uint64 // its token, if known
}

func (e *HeldError) Error() string {
	switch {
	case e.Owner == "":
		return fmt.Sprintf("dsync: lock %q held by another owner", e.Key)
	case e.Token == 0:
		return fmt.Sprintf("dsync: lock %q held by %s", e.Key, e.Owner)
	}
	return fmt.Sprintf("dsync: lock %q held by %s (token %d)", e.Key, e.Owner, e.Token)
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }
