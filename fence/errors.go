package fence

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxToken is the largest token the adapters accept. Tokens are kept in
// signed 64-bit columns and fields. dsync's tokens start at 1 and rise from
// hold to hold of a key (dsync.Mutex.Token), far below it.
const MaxToken = 1<<63 - 1

// MaxKeyLen is the longest key, in bytes, that the adapters accept.
// The SQL stores keep it in a primary key, which MySQL limits in bytes.
const MaxKeyLen = 512

// Sentinel errors. Match them with errors.Is.
var (
	// ErrStale is matched by the error of a write that a fence refused
	// because a later token of its key was accepted first: the writer's
	// hold has ended (its process was paused past its lease, or the lease
	// was lost), and its write did not apply. An adapter's refusal of a
	// key is a *StaleError; fencemongo.ErrFenced, a refusal by a fenced
	// document rather than by a key's mark, matches ErrStale too.
	ErrStale = errors.New("fence: stale token")

	// ErrBadKey is returned for an empty key or one longer than MaxKeyLen
	// bytes, before any I/O.
	ErrBadKey = errors.New("fence: a key is 1 to 512 bytes")

	// ErrBadToken is returned for token 0 (no hold: dsync.Mutex.Token
	// returns 0 when the Mutex is not held) or a token above MaxToken,
	// before any I/O.
	ErrBadToken = errors.New("fence: a token is 1 to 2^63-1 (is the lock held?)")
)

// A StaleError is a fence's refusal of a write under Token to Key.
// Mark, a later token, was accepted first. Mark is 0 when the fence did
// not tell it. It matches ErrStale.
type StaleError struct {
	Key   string
	Token uint64
	Mark  uint64
}

func (e *StaleError) Error() string {
	s := "fence: stale token " + strconv.FormatUint(e.Token, 10) + " for key " + strconv.Quote(e.Key)
	if e.Mark != 0 {
		s += ": token " + strconv.FormatUint(e.Mark, 10) + " was accepted first"
	} else {
		s += ": a later token was accepted first"
	}
	return s
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Check returns an error for a key or a token that no adapter accepts.
// The error wraps ErrBadKey or ErrBadToken, with the value at fault.
// Check returns nil otherwise. The adapters call it before any I/O.
func Check(key string, token uint64) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w (got %d bytes)", ErrBadKey, len(key))
	}
	if token == 0 || token > MaxToken {
		return fmt.Errorf("%w (got %d)", ErrBadToken, token)
	}
	return nil
}
