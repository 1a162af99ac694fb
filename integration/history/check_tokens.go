package history

// checkTokenOrder checks that holds of key that conflict began in token
// order: a hold's token is larger than that of every conflicting hold
// begun before it in its era (tokens restart after a reset of the
// store), unless it resumes the hold with the largest token (resumes).
// hs are the holds of key in the order they began.
func checkTokenOrder(r *Report, key string, hs []*Hold, era eras) {
	// maxTok: the hold with the largest token of each class begun so far
	// in the current era (the latest of those with that token).
	maxTok := map[class]*Hold{}
	curEra := -1
	for _, h := range hs {
		if e := era.of(h.Acquired); e != curEra {
			curEra = e
			clear(maxTok)
		}
		resumed := false
		for _, p := range maxTok {
			switch {
			case !conflicts(h, p) || h.Token > p.Token:
			case resumes(h, p):
				resumed = true
			default:
				r.add(KindTokenOrder, key, "%v began at %s after %v began at %s, with a token not larger",
					h, ts(h.Acquired), p, ts(p.Acquired))
			}
		}
		if resumed {
			r.Resumes++
		}
		if p := maxTok[h.class()]; p == nil || h.Token >= p.Token {
			maxTok[h.class()] = h
		}
	}
}

// resumes reports whether h takes back p, the hold of the largest token
// begun before it that it conflicts with: a hold lost to an outage of the
// store, taken back with its token (dsync.ClientWithOutageGrace). Only the
// process that held p, after it saw p's loss, and with no conflicting
// hold begun in between (p has the largest token: any later one would
// have a larger token, which h's is not above).
func resumes(h, p *Hold) bool {
	return h.Token == p.Token && h.PID == p.PID && h.class() == p.class() &&
		(h.Owner == "" || p.Owner == "" || h.Owner == p.Owner) &&
		p.Lost && p.LostAt <= h.Acquired
}
