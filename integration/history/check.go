package history

// Check rebuilds the holds of a merged history (any order) and checks:
//
//   - no two holds of a key that conflict overlap in their validity
//     intervals [Acquired, ValidEnd] (readers may share a key, and
//     weighted holds of one limit while their weights fit it; weighted
//     holds of different limits conflict) (check_exclusion.go);
//   - tokens strictly increase in the order holds that conflict began
//     (check_tokens.go), but for a hold its process lost to an outage
//     of the store and took back with the same token, nobody's
//     conflicting hold begun in between (a resume), between resets of
//     the store; with
//     Options.EmptyingGap, across emptyings too, as they promise
//     (check_emptying.go);
//   - weighted holds began in queue order: none while claims queued
//     before it left no room (check_fifo.go);
//   - every loss was signalled no later than its deadline plus the
//     tolerance, not counting the time the process was paused (SIGSTOP)
//     or stalled (EvStall: not scheduled at all, on an overloaded host);
//   - no hold outlived its deadline without a loss signal (same count)
//     (check_loss.go, pauses.go);
//   - the library's deadline never exceeded the one predicted from
//     replies that arrived in time (a late reply was not counted);
//   - an Unlock called after the deadline reported ErrLost
//     (check_deadline.go);
//   - observers saw leaders with strictly increasing tokens, and the
//     values of a term (Proclaim) with increasing revisions, each as its
//     leader proclaimed it, owned by the hold with that token
//     (check_observe.go);
//   - no run of a Once started after its done record was confirmed or
//     seen, and every record names a run that succeeded (check_once.go);
//   - every lock-set grant was recorded whole: each member held, with a
//     token, by one process (check_sets.go).
//
// Register writes are checked by CheckWrites (check_writes.go).
func Check(events []Event, opts *Options) *Report {
	r := &Report{Holds: make(map[string][]*Hold), Faults: make(map[string]int)}
	era := newEras(events)
	r.collectHolds(rebuildHolds(events))
	ps := collectPauses(r, events)
	for key, hs := range r.Holds {
		checkDeadlines(r, key, hs, opts)
		checkExclusion(r, key, hs)
		checkTokenOrder(r, key, hs, era)
		checkFIFO(r, key, hs, era)
		r.Handoffs += handoffs(hs)
	}
	checkLosses(r, opts, ps)
	checkObservers(r, events, era)
	checkOnce(r, events, era)
	checkSets(r, events)
	if opts != nil && opts.EmptyingGap > 0 {
		checkAcrossEmptyings(r, events, opts.EmptyingGap)
	}
	r.sortViolations()
	return r
}

// handoffs counts the consecutive holds in hs by different processes.
func handoffs(hs []*Hold) int {
	n := 0
	for i := 1; i < len(hs); i++ {
		if hs[i].PID != hs[i-1].PID {
			n++
		}
	}
	return n
}
