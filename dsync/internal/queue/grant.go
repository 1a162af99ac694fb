package queue

import (
	"errors"
	"fmt"
)

// The grant rule: when a claim holds, given what lies below it in its
// key's queue.
//
// A claim has terms: a mode and, for weighted claims, a weight and the
// key's limit.
//
//   - Exclusive: it holds when every lower claim has ended.
//   - Shared: it holds when every lower claim that is not shared has
//     ended.
//   - Weighted: it holds when every lower claim that is not weighted with
//     the same limit has ended, and the weights of the live lower weighted
//     claims plus its own are at most its limit.
//
// Live lower claims count whether they hold or still wait, so claims hold
// in queue order: a claim never passes one below it that conflicts with
// it, nor one that waits because the limit is full. Claims of different
// modes conflict (a key's primitives are meant to use one family: an
// exclusive and shared one, or a weighted one; mixing them is safe, only
// coarse), and so do weighted claims of different limits: the limit is
// each claim's, and processes may disagree on it (a limit changed by a
// rolling restart), so claims of each limit take turns, in queue order,
// and the weighted holds valid at once all carry one limit and fit it.
// Were they to pass each other, a claim of a large limit could hold
// beside claims of a small one with more weight than the small limit
// allows.
//
// A walk reads down the queue until it knows enough. A release says its
// claim held, so everything its own mode conflicts with had ended below
// it: a release of an exclusive claim ends every walk (everything below
// had ended), a release of a shared claim ends a shared walk (no
// non-shared claim below was live). A release marker whose claim held
// with every lower claim ended says so (Doc.Clear), and ends every walk
// too; so do epoch 1, which has nothing below, and a floor that counts.
// Everything else is passed: ended claims, and the live ones the walker's
// mode allows (a weighted walker counts their weights).

// Terms are how a claim shares its key.
type Terms struct {
	Mode Mode
	// Weighted claims only: the claim's weight, and the key's limit.
	Weight, Limit int64
}

// ExclusiveTerms are a Mutex's terms.
var ExclusiveTerms = Terms{Mode: Exclusive}

func (t Terms) validate() error {
	switch t.Mode {
	case Exclusive, Shared:
		if t.Weight != 0 || t.Limit != 0 {
			return errors.New("only a weighted claim has a weight and a limit")
		}
	case Weighted:
		if t.Weight < 1 || t.Limit < t.Weight {
			return fmt.Errorf("weight %d and limit %d: want 1 ≤ weight ≤ limit", t.Weight, t.Limit)
		}
	default:
		return fmt.Errorf("unknown mode %d", t.Mode)
	}
	return nil
}

// terms are the terms a claim document carries (an older dsync's carry
// none: exclusive).
func terms(d Doc) Terms { return Terms{Mode: d.Mode, Weight: d.Weight, Limit: d.Limit} }

// passes reports whether a walker with terms w may hold while the claim
// d below it is live (a weighted walker still counts d's weight).
func passes(w Terms, d Doc) bool {
	switch w.Mode {
	case Shared:
		return d.Mode == Shared
	case Weighted:
		return d.Mode == Weighted && d.Limit == w.Limit
	}
	return false
}

// stopsAt reports whether a walker with terms w, reading down the queue,
// can stop at the release m of claim d: nothing below d can keep it from
// holding.
func stopsAt(w Terms, d, m Doc) bool {
	return m.Clear || d.Mode == Exclusive || w.Mode == Shared && d.Mode == Shared
}

// stopsAll reports whether the release m of claim d ends every walk:
// everything below d had ended when it held.
func stopsAll(d, m Doc) bool { return m.Clear || d.Mode == Exclusive }

// fits reports whether a weighted walker with terms w fits with the live
// lower weighted claims passed (every one of them, for any other mode,
// passes by its mode alone).
func fits(w Terms, passed []passedClaim) bool {
	if w.Mode != Weighted {
		return true
	}
	sum := w.Weight
	for _, p := range passed {
		if p.d.Weight > w.Limit-sum {
			return false
		}
		sum += max(p.d.Weight, 0)
	}
	return true
}

// A passedClaim is a live claim below a walker that its mode let it pass,
// with what the walker knows of its session.
type passedClaim struct {
	d Doc
	b Blocker
	// walk is the walk of the claim (Claim.walks) that found it live
	// (read its marker, or its session), 0 if none did: full does not
	// read again what the same walk just read.
	walk uint64
}

// Holding reports which of a key's live claims, in queue order (as Queue
// returns them), hold by the grant rule: those that pass every live
// claim below them and, weighted, fit beside them. It is for showing a
// queue (dsync status): a walk decides for itself.
func Holding(q []Doc) []bool {
	out := make([]bool, len(q))
	for i, d := range q {
		w := terms(d)
		var passed []passedClaim
		out[i] = true
		for _, below := range q[:i] {
			if !passes(w, below) {
				out[i] = false
				break
			}
			passed = append(passed, passedClaim{d: below})
		}
		out[i] = out[i] && fits(w, passed)
	}
	return out
}
