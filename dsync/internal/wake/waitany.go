package wake

import (
	"context"
	"slices"
)

// WaitAny waits, as Wait does, until the end of blockers may have been
// recorded: a weighted claim waiting for room waits for every claim it
// passed, and looks again once the ends it heard of add up to need units
// (the blockers' Weight; queue.Claim.Shortfall), or at once when a wait's
// own timers say to look (a poll, a session's expiry). Ends that cannot
// make room alone do not wake it: with 4 processes waiting for a full
// Semaphore, a release woke all of them, and each re-read the markers of
// the units it passed, where only the next could hold. It returns the
// epochs of the blockers whose ends it heard of (the walk reads their
// markers first, at once: queue.Claim.Suspect), and nil to walk again, or
// ctx's cause. Each wait announces how many ends it needs (endsNeeded),
// and once an end heard of leaves the waiter needing only one more, it
// says so again for the claims it still waits for (NeedOne): their owners
// then send their ends to it at once (dsync/hint's endDefer). since is
// the mark taken before the walk that found blockers live (Wait).
func (h *Hub) WaitAny(ctx context.Context, key string, own uint64, blockers []Blocker, need int64, since uint64) ([]uint64, error) {
	if len(blockers) == 1 {
		heard, err := h.Wait(ctx, key, own, blockers[0], 1, since)
		if heard {
			return []uint64{blockers[0].Epoch}, err
		}
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type woken struct {
		b     Blocker
		heard bool
		err   error
	}
	done := make(chan woken, len(blockers))
	for _, b := range blockers {
		n := endsNeeded(b, blockers, need)
		go func() {
			heard, err := h.Wait(wctx, key, own, b, n, since)
			done <- woken{b, heard, err}
		}()
	}
	waiting := slices.Clone(blockers)
	var (
		heard []uint64
		units int64
		err   error
	)
	left := len(blockers)
	for left > 0 {
		w := <-done
		left--
		if w.heard {
			heard = append(heard, w.b.Epoch)
			units += w.b.Weight
		}
		if !w.heard || w.err != nil || units >= need {
			err = w.err
			break
		}
		waiting = slices.DeleteFunc(waiting, func(b Blocker) bool { return b.Epoch == w.b.Epoch })
		for _, b := range waiting {
			if endsNeeded(b, waiting, need-units) == 1 {
				h.NeedOne(ClaimID{Key: key, Epoch: b.Epoch}, own)
			}
		}
	}
	cancel()
	for range left {
		if w := <-done; w.heard {
			heard = append(heard, w.b.Epoch) // woken meanwhile
		}
	}
	return heard, err
}

// endsNeeded is how many ends of blockers, b's among them, a waiter
// short of units units must hear of, at least, before it may hold: 1 if
// b's end may be all it lacks (driver.Event.Need).
func endsNeeded(b Blocker, blockers []Blocker, units int64) uint64 {
	got, n := b.Weight, uint64(1)
	var others []int64
	for _, o := range blockers {
		if o.Epoch != b.Epoch {
			others = append(others, o.Weight)
		}
	}
	slices.Sort(others)
	for i := len(others) - 1; i >= 0 && got < units; i-- {
		got += others[i]
		n++
	}
	return n
}
