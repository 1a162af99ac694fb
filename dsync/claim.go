package dsync

import "fmt"

// HeldError is what a try meets when the key is held or waited for. A try
// (TryLockContext, TryRLockContext, TryAcquireContext) meets it when
// another claim holds the key or waits for it ahead. It meets it too when
// another goroutine of this process holds or is acquiring the same Mutex
// (or the same RWMutex's write lock). errors.Is(err, ErrHeld) reports true
// for it.
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
