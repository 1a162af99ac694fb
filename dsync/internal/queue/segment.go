package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A key's queue is a series of segments. A segment starts when a process
// finds no live one: its first claim's epoch, the segment's base, is
// derived from the store's time (base), so that it lies above every epoch
// of every earlier segment, and the store can forget a key entirely
// (Sweep) without a later hold ever reusing a token.
//
// Which segment is live is decided by gates: one document per key and
// bucket of store time (driver.GateID), naming a segment. A gate's ID is
// exclusive, so at most one segment owns a bucket. A start inserts the
// gates of every bucket from the one before the earliest possible store
// time to the one after the latest, then its first claim, in one ordered
// insert: it succeeds only if no other segment owns any of those buckets.
// A process relies on a segment (inserts into it, holds in it) only while
// it knows a gate of that segment for a bucket b with the latest possible
// store time before end(b+1) − Margin: it is covered. Processes with live
// claims in a segment insert the gates of the next buckets as time goes
// on (Refresh), so a segment in use stays covered; one that nobody
// covers any more is over, and the next claim starts a new one above it.
// (See the package documentation for why two segments are never relied
// on at once, and why tokens still only grow.)

// errLapsed reports that a claim's segment is no longer covered, or is
// over: the claim was withdrawn, and its owner claims again (a new claim
// joins or starts the live segment).
var errLapsed = errors.New("the key's segment lapsed")

// IsLapsed reports whether err says a claim was given up because its
// segment lapsed: claiming again is the remedy, and nothing was lost.
func IsLapsed(err error) bool { return errors.Is(err, errLapsed) }

// segments is this engine's side of the key's segments: the bucket span
// in force and the store's history as last read (span.go, history.go),
// the gates it reads and inserts (coverage here, refresh.go) and the
// sweep of idle keys (sweep.go). What it learns of each key's segment it
// records in keys.
type segments struct {
	*plant
	store Store
	maint driver.Maintainer // the store's sweeper's role; nil if it has none
	clock Times
	cfg   Config
	keys  *keys

	// spanNs is the bucket span in force: Config.Span, or the store's
	// (Agree).
	spanNs atomic.Int64

	mu sync.Mutex
	// history is the nonce of the store's protocol document as this
	// engine read or inserted it last: the store's history (history.go).
	history string
}

// bucket returns the bucket of store time t.
func (s *segments) bucket(t time.Time) int64 {
	return floorDiv(t.UnixNano(), int64(s.span()))
}

// bucketEnd returns the start of the bucket after b.
func (s *segments) bucketEnd(b int64) time.Time {
	return time.Unix(0, (b+1)*int64(s.span()))
}

// base returns the first epoch of a segment that starts at store time t
// (at the earliest): Rate epochs per Quantum of store time since 1970.
func (s *segments) base(t time.Time) uint64 {
	q := floorDiv(t.UnixNano(), int64(s.cfg.Quantum))
	if q < 1 {
		q = 1
	}
	return uint64(q) * s.cfg.Rate
}

// ceiling is the bound every epoch inserted at a latest possible store
// time L stays below: base(L + Margin). A segment started later than any
// process relied on this one begins at or above it (Margin ≥ Quantum).
func (s *segments) ceiling(latest time.Time) uint64 {
	return s.base(latest.Add(s.cfg.Margin))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// coverEnd is when ks's coverage ends, in store time.
func (s *segments) coverEnd(ks keyState) time.Time {
	if ks.seg == 0 {
		return time.Time{}
	}
	return s.bucketEnd(ks.cover + 1).Add(-s.cfg.Margin)
}

// gate returns the gate of key's bucket b naming seg, with floor f, sent
// at sent in the store's history (history.go).
func gate(key string, seg uint64, b int64, f Floor, sent time.Time, history string) Doc {
	return Doc{ID: GateID(key, b), Key: key, Kind: KindGate, Seg: seg, Bucket: b, Floor: f, Sent: sent, Nonce: history}
}

// CoverEnd returns when this engine's coverage of key's segment ends, in
// store time (zero if it has none): a hold of key must end before it.
func (s *segments) CoverEnd(key string) time.Time {
	if s.keys.lost.Load() {
		return time.Time{}
	}
	return s.coverEnd(s.keys.snapshot(key))
}

// noteStray records that key's buckets up to the gate of bucket b belong
// to a segment of another history: a start meets them until the store's
// time is past the coverage that gate would give, and the next claims of
// key report it busy until then without a request.
func (s *segments) noteStray(key string, b int64) {
	s.keys.noteStray(key, s.bucketEnd(b+1).Add(-s.cfg.Margin))
}

// liveSegment returns the gate that covers key now: the highest gate,
// among the buckets around the store's time, whose coverage has not ended
// by the earliest possible store time; it names the segment a process may
// rely on, and the key's floor. found is false when no segment is
// covered: the key is idle.
func (s *segments) liveSegment(ctx context.Context, key string) (g Doc, found bool, err error) {
	return s.liveSegmentAt(ctx, key, s.clock.ServerNow())
}

// liveSegmentAt is liveSegment at the store time now.
func (s *segments) liveSegmentAt(ctx context.Context, key string, now Interval) (g Doc, found bool, err error) {
	for b := s.bucket(now.Latest) + 1; b >= s.bucket(now.Earliest)-1; b-- {
		if !now.Earliest.Before(s.bucketEnd(b + 1).Add(-s.cfg.Margin)) {
			break
		}
		g, ok, err := s.store.Get(ctx, GateID(key, b))
		if err != nil {
			return Doc{}, false, err
		}
		if ok && g.Kind == KindGate && g.Seg != 0 {
			return g, true, nil
		}
	}
	return Doc{}, false, nil
}
