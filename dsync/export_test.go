package dsync

import "github.com/go-dsync/dsync/internal/suspend"

// SuspendClock returns SystemClock with the machine's suspended time
// counted by c instead of suspend.Process: a test's suspend.Fake.
func SuspendClock(c *suspend.Counter) Clock { return systemClock{c} }

// How a failed put of the directory of keys is tried again.
const (
	PutRetries = putRetries
	PutPause   = putPause
)

// ListAhead is how many keys' queues List reads at once, at most.
const ListAhead = listAhead
