package dsync

import (
	"errors"
	"fmt"
	"strings"
)

// The error of a claim whose process's lease ended before it held; what
// a call returns when its context ends is dsync/internal/ctxerr's.

// leaseEndedError is what a claim returns when this process's session
// was retired before the claim held: the session's cause, which wraps
// ErrLost for the holds the session had, names why. The claim lost no
// hold, so the error is not ErrLost; it is what else the cause is
// (ErrClosed, ErrRevoked), and says the cause once.
type leaseEndedError struct {
	key   string
	cause error // the session's cause: wraps ErrLost
	other error // the claim's own error, when it is not the cause's doing
}

func (e *leaseEndedError) Error() string {
	why := strings.TrimPrefix(e.cause.Error(), ErrLost.Error()+": ")
	msg := fmt.Sprintf("dsync: acquire %q: this process's lease ended before the claim held: %s", e.key, why)
	if e.other != nil {
		msg += " (" + e.other.Error() + ")"
	}
	return msg
}

// Is reports whether the session's cause, or the claim's own error, is
// target; never ErrLost.
func (e *leaseEndedError) Is(target error) bool {
	if target == ErrLost {
		return false
	}
	return errors.Is(e.cause, target) || e.other != nil && errors.Is(e.other, target)
}

// leaseEnded returns the error of key's claim, which failed with err
// after its session ended with cause.
func leaseEnded(key string, cause, err error) error {
	e := &leaseEndedError{key: key, cause: cause}
	if !errors.Is(err, cause) {
		e.other = err
	}
	return e
}
