package history

import "fmt"

// Hold is one hold of a key, rebuilt from the events of one worker process
// that share its PID, the key and the token.
type Hold struct {
	Worker string
	PID    int
	Owner  string
	Key    string
	Token  uint64

	// Acquired is when Lock (or Campaign) returned; 0 when the worker
	// recorded no acquire (it died first, or the library did not count
	// the lease): such a hold is not checked.
	Acquired int64
	// Deadline is the latest local deadline recorded, from any source:
	// a hold with no end event (a killed worker) is valid until then.
	Deadline int64
	// LibDeadline and PredDeadline are the latest deadlines recorded from
	// each source (SrcLib, SrcPred), 0 if none.
	LibDeadline  int64
	PredDeadline int64
	// Ended is when the worker stopped relying on the hold (before
	// Unlock); 0 if it never said.
	Ended int64
	// Unlocked is when Unlock was called (0 if not recorded), UnlockDL the
	// library's deadline then, UnlockLost whether it returned ErrLost.
	Unlocked   int64
	UnlockDL   int64
	UnlockLost bool
	// Lost: the loss signal fired, observed at LostAt, while LostDeadline
	// was the deadline in force (the library's, read at the loss: when
	// the hold was lost, for a hold lost before its deadline).
	Lost         bool
	LostAt       int64
	LostDeadline int64

	TTL    int64
	Margin int64

	// Mode, Weight and Limit: how the hold shared its key (Event.Mode).
	Mode   string
	Weight int64
	Limit  int64
}

// conflicts reports whether holds a and b may not be valid at once:
// readers may share a key, and weighted holds of one limit up to it;
// weighted holds of different limits conflict (a key's limit changed, or
// its processes disagree on it: the claims of each limit take turns).
func conflicts(a, b *Hold) bool { return a.class() != b.class() || a.Mode == "" }

// Conflicts reports whether holds a and b may not be valid at once (see
// conflicts).
func Conflicts(a, b *Hold) bool { return conflicts(a, b) }

// class is what a hold shares its key with: its mode and, for a weighted
// hold, its limit.
type class struct {
	mode  string
	limit int64
}

func (h *Hold) class() class {
	if h.Mode == ModeWeighted {
		return class{h.Mode, h.Limit}
	}
	return class{h.Mode, 0}
}

// ValidEnd is the end of the hold's validity interval: its end, or its
// deadline if that came first (or if it has no end).
func (h *Hold) ValidEnd() int64 {
	if h.Ended != 0 && h.Ended < h.Deadline {
		return h.Ended
	}
	return h.Deadline
}

func (h *Hold) String() string {
	return fmt.Sprintf("%s(pid %d) %s#%d", h.Worker, h.PID, h.Key, h.Token)
}
