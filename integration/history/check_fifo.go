package history

// checkFIFO checks that weighted holds of a key were granted in queue
// order: a claim waits for the live claims queued before it, whether they
// hold or wait, so a hold b may begin only if its weight, with that of
// every claim of its class below it (a lower token) that was live then,
// fits the limit. A lower claim was live when b began if its hold was
// still valid then, or if it began later and was valid when it began (a
// claim is live from its insert, before b's, until it ends or its session
// expires, and a hold valid at its start had a live session all along).
//
// This is the rule a semaphore that lets small requests pass a larger one
// waiting for room breaks (x/sync/semaphore's FIFO promise); readers and
// writers need no rule of their own here, since a reader granted past a
// waiting writer begins before a conflicting hold of a lower token, which
// the token order check reports.
//
// hs are the holds of key in the order they began; era tells the store's
// resets apart (tokens restart after one).
func checkFIFO(r *Report, key string, hs []*Hold, era eras) {
	for _, b := range hs {
		if b.Mode != ModeWeighted {
			continue
		}
		weight, lower, waiting := b.Weight, 0, 0
		for _, a := range hs {
			if a == b || a.class() != b.class() || a.Token >= b.Token || era.of(a.Acquired) != era.of(b.Acquired) {
				continue
			}
			if end := a.ValidEnd(); end > b.Acquired && end > a.Acquired {
				weight += a.Weight
				lower++
				if a.Acquired > b.Acquired {
					waiting++
				}
			}
		}
		// Without a waiting claim among them, the holds valid at once are
		// over the limit, which the overlap check reports.
		if weight > b.Limit && waiting > 0 {
			r.add(KindFIFO, key, "%v (weight %d) began at %s while %d claims queued before it and live then (%d of them still waiting) weighed %d: %d in all, over the limit %d",
				b, b.Weight, ts(b.Acquired), lower, waiting, weight-b.Weight, weight, b.Limit)
		}
	}
}
