package fencetest

import "context"

// A Resource is a fenced resource under test, seen as one register per key.
// A register is an int64, 0 until written. Its writes go through the
// adapter's fence; its reads do not.
type Resource interface {
	// Write writes w.Value to w.Key's register under w.Token, through
	// the fence. It returns nil if the write applied; an error matching
	// fence.ErrStale if the fence refused it, and then nothing was
	// written; any other error if it cannot tell (a lost reply, ctx's
	// end).
	Write(ctx context.Context, w Write) error

	// Read returns key's register: the value last written, 0 if none.
	Read(ctx context.Context, key string) (int64, error)
}

// A Write is one write of the suite's.
type Write struct {
	Key   string
	Token uint64
	Value int64

	// Admitted, if not nil, is called by the Resource after its fence
	// admitted the write (raised the key's mark to Token) and before the
	// write applies, inside the same atomic unit: the transaction, or
	// the admitted request. The suite pauses a holder there. If it
	// returns an error, the Resource abandons the write (rolls back) and
	// returns that error.
	Admitted func(ctx context.Context) error
}

// A SessionEnder is a Resource whose mark store may end a session under a
// write. Its fence admits a write through a session of its mark store (a
// database connection, the locks of a session's). The store may end that
// session while the write is under way: a server's idle timeout, a
// failover, a dropped connection. For a SessionEnder, the suite adds a
// scenario where the store ends the session under an admitted writer.
type SessionEnder interface {
	Resource

	// EndSession ends, from the store's side, the sessions under the
	// writes of key that the fence admitted and that have not returned,
	// as the store's server would, and returns once they ended. The
	// writes go on: only the store's side of them ends.
	EndSession(ctx context.Context, key string) error
}
