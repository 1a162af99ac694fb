package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Compaction. A key whose segments nobody has covered for the idle age
// leaves nothing in the store: Sweep deletes its documents, and the next
// claim of the key starts a segment whose base, taken from the store's
// time, lies above every token the key ever had. Old gates of keys still
// in use are deleted too. One process at a time sweeps (dsync runs it
// under a lock of its own); a sweep that runs twice, or whose deletes land
// late, deletes only what a later one would.
//
// Why it is safe: a key is swept only if it has no gate of a bucket from
// the one of (now − idle age) on (those with one are kept: RecentKeys),
// and only its documents sent before (now − idle age) go. A process relies on a segment only while a gate
// covers the store's time, so no segment of the key was relied on for
// about idle − 2 × Span before the sweep; a start that lands late with
// old gates gave its sender coverage that had ended by then. A segment
// that starts after the sweep read the store sends its documents after
// it, and they stay.

// MinIdle is the shortest idle age Sweep accepts: four buckets.
func (s *segments) MinIdle() time.Duration { return 4 * s.span() }

// Sweep compacts the keys idle for at least idle, and deletes gates of
// buckets long past. It returns how many documents it deleted.
func (s *segments) Sweep(ctx context.Context, idle time.Duration) (int64, error) {
	if s.maint == nil {
		return 0, fmt.Errorf("the store cannot be compacted (no driver.Roles.Maintenance): %w", errors.ErrUnsupported)
	}
	if idle < s.MinIdle() {
		return 0, fmt.Errorf("idle age %v is below %v (four buckets of %v)", idle, s.MinIdle(), s.span())
	}
	// Gates are judged by their buckets' numbers, which mean other times
	// under another span.
	history, err := s.confirmSpan(ctx)
	if err != nil {
		return 0, err
	}
	now := s.clock.ServerNow()
	before := now.Earliest.Add(-idle)
	keep, err := s.maint.RecentKeys(ctx, s.bucket(before))
	if err != nil {
		return 0, err
	}
	n, err := s.maint.Compact(ctx, before, keep)
	if err != nil {
		return n, err
	}
	// The store may have been emptied since the sweep began, and a
	// process of another span have recorded its own: its gates' numbers
	// are not this span's, and dropping by number would delete gates it
	// relies on. So the drop is sent only if the history is the same;
	// and, as it may land late, after an emptying that came after that
	// read, it spares the gates sent after the read was: the next
	// history's gates are all sent after the emptying.
	read := s.clock.ServerNow().Earliest
	if again, err := s.confirmSpan(ctx); err != nil || again != history {
		return n, err
	}
	return n, s.maint.DropGates(ctx, s.bucket(now.Earliest)-3, read)
}
