package dsync

import "fmt"

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
}

// HeldError is what TryLock's attempt meets when another claim holds or
// waits for the key (a Mutex reports it through WithErrorHandler only as
// ErrHeld). errors.Is(err, ErrHeld) reports true for it.
type HeldError struct {
	Key   string
	Owner string // the current holder or first waiter, if known
	Token uint64 // its token, if known
}

func (e *HeldError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("dsync: lock %q held by another owner", e.Key)
	}
	return fmt.Sprintf("dsync: lock %q held by %s (token %d)", e.Key, e.Owner, e.Token)
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }
