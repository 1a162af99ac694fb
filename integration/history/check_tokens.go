package history

// checkTokenOrder checks that holds of key that conflict began in token
// order: a hold's token is larger than that of every conflicting hold
// begun before it in its era (tokens restart after a reset of the
// store). hs are the holds of key in the order they began.
func checkTokenOrder(r *Report, key string, hs []*Hold, era eras) {
	// maxTok: the hold with the largest token of each class begun so far
	// in the current era.
	maxTok := map[class]*Hold{}
	curEra := -1
	for _, h := range hs {
		if e := era.of(h.Acquired); e != curEra {
			curEra = e
			clear(maxTok)
		}
		for _, p := range maxTok {
			if conflicts(h, p) && h.Token <= p.Token {
				r.add(KindTokenOrder, key, "%v began at %s after %v began at %s, with a token not larger",
					h, ts(h.Acquired), p, ts(p.Acquired))
			}
		}
		if p := maxTok[h.class()]; p == nil || h.Token > p.Token {
			maxTok[h.class()] = h
		}
	}
}
