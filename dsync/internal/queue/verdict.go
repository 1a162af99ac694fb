package queue

// giveUp is a walk step's verdict that the walk's claim c must never hold
// (its segment lapsed or is stale, or the store lost the key's history).
// The step that finds it returns it as its error, and takes no action on
// it: the walk (Walk) then forgets what the verdict says this process
// knows wrongly, withdraws c (abandon), and returns err. The fields say
// what is forgotten, and whether before or after the withdrawal.
type giveUp struct {
	err error
	// Before the withdrawal: everything learned of every key and the
	// claims confirmed at their insert (the store lost the key's history:
	// ErrReset); c's segment (a later one started, or no gate of this
	// history names it); c's segment if learnt in c's history (claims of
	// another history of the store: dropStale).
	reset, drop, dropStale bool
	// After the withdrawal: c's segment (its coverage lapsed), and the
	// epoch found missing with no floor that counts above it (noteGap).
	dropAfter bool
	gap       uint64
}

func (g *giveUp) Error() string { return g.err.Error() }

func (g *giveUp) Unwrap() error { return g.err }
