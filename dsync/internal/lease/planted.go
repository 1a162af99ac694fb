package lease

import (
	"time"

	"github.com/go-dsync/dsync/internal/plant"
)

// plantedLate is how late a session's deadline is judged:
// plant.MutexPastDeadline keeps holds a TTL past it. In every build
// without -tags dsync_planted it is a constant 0.
func plantedLate(ttl time.Duration) time.Duration {
	if plant.On && plant.Is(plant.MutexPastDeadline) {
		return ttl
	}
	return 0
}
