package queue

import (
	"context"
	"errors"
	"time"
)

// The decisions of segments and their gates that a planted error changes
// (see Bug): a start's buckets and base (start.go), a segment's coverage
// (segment.go), the floor a gate records (refresh.go), the store's span
// (span.go) and history (history.go). As in planted_walk.go, each
// function is named by what it decides, and its body is the protocol's
// rule and then what the planted error makes of it; in a build without
// -tags dsync_planted it is the rule alone.

// startBuckets returns the buckets a start's gates cover at server time
// now: from the one before the earliest possible store time's to the
// one after the latest's. BugStartSkipsPrevBucket omits the first.
func (e *Engine) startBuckets(now Interval) (lo, hi int64) {
	lo, hi = e.segments.bucket(now.Earliest)-1, e.segments.bucket(now.Latest)+1
	if e.plant.startSkipsPrevBucket() {
		lo++
	}
	return lo, hi
}

// startBase returns the base of a segment q starts at the earliest
// possible store time earliest: its first epoch. BugCompactResetsTokens
// starts at a fixed low base instead, the lowest epoch above it that
// has no claim.
func (q *claimRun) startBase(ctx context.Context, earliest time.Time) uint64 {
	e := q.e
	seg := e.segments.base(earliest)
	if e.plant.compactResetsTokens() {
		seg = 1 << 20
		for {
			d, found, gerr := e.store.Get(ctx, ClaimID(q.key, seg))
			if gerr != nil || !found || d.Kind != KindClaim {
				break
			}
			seg++
		}
	}
	return seg
}

// covered reports whether ks relies on a segment whose coverage lasts
// past the latest possible store time now. BugNoCoverage relies on any
// segment once known.
func (s *segments) covered(ks keyState, latest time.Time) bool {
	if s.plant.noCoverage() {
		return ks.seg != 0
	}
	return ks.seg != 0 && !s.keys.lost.Load() && latest.Before(s.coverEnd(ks))
}

// nextFloor is the floor a gate inserted after ks's gate of bucket cover
// records: the higher of that gate's and the one this process vouches for
// (floor.go). BugFloorNotMonotone records only the one this process
// vouches for.
func (s *segments) nextFloor(ks keyState) Floor {
	own := ks.own
	if own.Seg != ks.seg {
		own = Floor{}
	}
	if own.Epoch > ks.floor.Epoch || s.plant.floorNotMonotone() {
		return own
	}
	return ks.floor
}

// spanLost returns err's *SpanError if err is one: the store records
// another span than this engine's (loseSpan). BugSpanIgnored loses no
// span.
func (s *segments) spanLost(err error) (*SpanError, bool) {
	var se *SpanError
	if !errors.As(err, &se) || s.plant.spanIgnored() {
		return nil, false
	}
	return se, true
}

// spansDiffer reports whether the store's span, as its protocol document
// names it, differs from this engine's (sameSpan). BugSpanIgnored takes
// every span for this engine's.
func (s *segments) spansDiffer(store, engine time.Duration) bool {
	return store != engine && !s.plant.spanIgnored()
}

// sameHistory reports whether gate g was sent in history, the one the
// store's protocol document names now. BugHistoryIgnored takes every
// gate for one of it.
func (s *segments) sameHistory(g Doc, history string) bool {
	return g.Nonce == history || s.plant.historyIgnored()
}

// sameKnown is sameKnown (history.go): whether two histories of the
// store may be one. BugClaimHistoryIgnored takes any two for one.
func (s *segments) sameKnown(a, b string) bool {
	return sameKnown(a, b) || s.plant.claimHistoryIgnored()
}
