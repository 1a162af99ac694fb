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

// OnJudgedOver makes f run each time a session of m's keeper is judged
// over by its deadline timer or by a renewal reply that came too late,
// right after the keeper's lock is released, in the goroutine that judged
// it (keeper.judgedOver).
func OnJudgedOver(m *Mutex, f func()) {
	k, err := m.client.keeperOf(&m.core)
	if err != nil {
		panic(err)
	}
	k.mu.Lock()
	k.judgedOver = f
	k.mu.Unlock()
}
