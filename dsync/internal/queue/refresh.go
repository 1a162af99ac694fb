package queue

import (
	"context"
	"errors"
	"slices"
)

// Refresh inserts, for each of keys, the gates of the buckets up to the
// one after the latest possible store time, so that its segment stays
// covered. keys are those of the holds whose validity has not ended: only
// holders refresh. A claim that comes to hold makes sure of its coverage
// then (ensureCover), and a process whose holds are over never extends a
// segment it may know only from a store since emptied. A key whose
// segment turns out to be over (a gate names another) is forgotten, and
// so is every key of a round whose gates the store's protocol document,
// read after they landed, does not confirm (confirmRound). It returns
// the keys whose segment lapsed or is over: their holds are lost.
func (s *segments) Refresh(ctx context.Context, keys []string) (lapsed []string, err error) {
	keys = slices.Clone(keys)
	slices.Sort(keys) // in an order that replays
	keys = slices.Compact(keys)
	now := s.clock.ServerNow()
	want := s.bucket(now.Latest) + 1
	// A holder knows the history its segment is relied on in (the one it
	// learnt the segment in): its gates record it (history.go).
	known := s.knownHistory()
	var pending []string
	for _, key := range keys {
		if ks := s.keys.snapshot(key); !s.covered(ks, now.Latest) {
			s.keys.dropCover(key, ks.seg)
			lapsed = append(lapsed, key)
			continue
		}
		pending = append(pending, key)
	}
	// One request per bucket still to cover (usually one in all), with the
	// next gate of every key that needs one: renewing N holds costs the
	// same commands as renewing one.
	for len(pending) > 0 {
		var gates []Doc
		for _, key := range pending {
			// The gate of bucket b records a floor at least that of b−1
			// (which this process inserted or read): a segment's floors
			// only rise with its buckets, which is what makes pruning
			// below one safe.
			ks := s.keys.snapshot(key)
			switch {
			case ks.seg == 0:
				lapsed = append(lapsed, key) // forgotten meanwhile: over
			case ks.cover < want:
				history := ks.history
				if history == "" {
					history = known // learnt from a gate of an older dsync
				}
				gates = append(gates, gate(key, ks.seg, ks.cover+1, s.nextFloor(ks), now.Latest, history))
			}
		}
		if len(gates) == 0 {
			break
		}
		errs := s.store.InsertEach(ctx, gates)
		pending = pending[:0]
		var landed []Doc
		for i, g := range gates {
			got, ok, gerr := s.gateLanded(ctx, g, errs[i])
			switch {
			case gerr != nil:
				err = gerr // unknown outcome: no coverage from it (it may land late)
			case !ok:
				lapsed = append(lapsed, g.Key)
			default:
				landed = append(landed, got)
			}
		}
		confirmed, over, cerr := s.confirmRound(ctx, landed)
		if cerr != nil {
			err = cerr
		}
		lapsed = append(lapsed, over...)
		for _, g := range confirmed {
			s.keys.learnGate(g.Key, g)
			pending = append(pending, g.Key) // it may need a gate above g
		}
	}
	return lapsed, err
}

// confirmRound reads the store's protocol document after a round of a
// refresh's gates landed, and returns those it confirms: those that
// record the history it names, if it names this process's span. The
// keys of the others are forgotten and returned as over: their gates
// record a history before an emptying (a segment this process kept
// across it), or the store records another span since (loseSpan). Either
// way no start in the store's history need meet them. A missing document
// confirms nothing either (the store was emptied since: the next history
// is not this refresh's to begin). On an error of unknown outcome (the
// read failed) it confirms nothing and forgets nothing: the next refresh
// reads again.
func (s *segments) confirmRound(ctx context.Context, landed []Doc) (confirmed []Doc, over []string, err error) {
	if len(landed) == 0 {
		return landed, nil, nil
	}
	p, found, err := s.store.Get(ctx, ProtocolID)
	if err != nil {
		return nil, nil, err
	}
	history := ""
	if found {
		if err = s.sameSpan(p); err == nil {
			history = p.Nonce
			s.learnHistory(history)
		} else {
			s.loseSpan(err)
		}
	}
	for _, g := range landed {
		if found && err == nil && s.sameHistory(g, history) {
			confirmed = append(confirmed, g)
			continue
		}
		s.keys.dropCover(g.Key, g.Seg)
		over = append(over, g.Key)
	}
	return confirmed, over, err
}

// refreshKey is Refresh of one key: it reports whether key is still
// covered.
func (s *segments) refreshKey(ctx context.Context, key string) (bool, error) {
	lapsed, err := s.Refresh(ctx, []string{key})
	return len(lapsed) == 0, err
}

// gateLanded learns from the outcome ierr of inserting gate g whether g's
// key may still be covered (ok), by got, the gate of g's bucket in the
// store; err reports an outcome unknown. A gate of g's bucket that exists
// already counts if it names g's segment (an earlier attempt of this
// process, or another holder's refresh); if it names another, the
// segment is over and forgotten. What counts is learnt only once the
// round is confirmed (confirmRound).
func (s *segments) gateLanded(ctx context.Context, g Doc, ierr error) (got Doc, ok bool, err error) {
	if errors.Is(ierr, ErrExists) {
		got, found, gerr := s.store.Get(ctx, GateID(g.Key, g.Bucket))
		if gerr != nil {
			return Doc{}, true, gerr
		}
		if !found || got.Kind != KindGate || got.Seg != g.Seg {
			// Another segment owns the bucket: this one is over (or its
			// gate was dropped, which happens only to buckets long past:
			// this process lost track of time).
			s.keys.dropCover(g.Key, g.Seg)
			return Doc{}, false, nil
		}
		return got, true, nil
	} else if ierr != nil {
		return Doc{}, true, ierr
	}
	return g, true, nil
}
