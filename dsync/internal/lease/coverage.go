package lease

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Coverage: a hold relies on its key's segment being covered (its gates,
// dsync/internal/queue) as on its session, so the Keeper caps the lease at the
// earliest coverage of the keys held, and extends that coverage beside
// its renewals.

// capLocked caps s's lease at the earliest coverage of the keys its holds
// rely on (none: no cap). A key whose coverage is unknown (coverLocked's
// 0: its knowledge was dropped) caps it at once, whatever the other keys
// held. k.mu must be held.
func (k *Keeper[H]) capLocked(s *Session[H]) {
	cp, held := time.Duration(0), false
	for h, hs := range k.holds {
		if hs != s {
			continue
		}
		if c := k.coverLocked(h.Key()); !held || c < cp {
			cp = c
		}
		held = true
	}
	if !held {
		s.lease.SetCap(0)
		return
	}
	s.lease.SetCap(max(cp, 1))
}

// refreshAsync refreshes the segments of s's keys in a goroutine of its
// own, unless a refresh of s is under way. It is bounded by half a bucket
// span (what is left is refreshed at the next renewal).
func (k *Keeper[H]) refreshAsync(s *Session[H]) {
	k.mu.Lock()
	if s.refreshing {
		k.mu.Unlock()
		return
	}
	s.refreshing = true
	k.mu.Unlock()
	k.env.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, max(k.p.TTL, k.env.Span()/2))
		defer cancel()
		k.refresh(ctx, s)
		k.mu.Lock()
		s.refreshing = false
		k.mu.Unlock()
	})
}

// refresh extends the coverage of the keys of s's active holds, loses
// the holds whose key's segment lapsed, and caps s's lease at the
// earliest coverage left.
func (k *Keeper[H]) refresh(ctx context.Context, s *Session[H]) {
	k.mu.Lock()
	var keys []string
	for _, h := range k.heldLocked(s) {
		keys = append(keys, h.Key())
	}
	k.mu.Unlock()
	if len(keys) == 0 {
		k.mu.Lock()
		s.lease.SetCap(0)
		k.mu.Unlock()
		return
	}
	lapsed, err := k.env.Refresh(ctx, keys)
	if err != nil && s.ctx.Err() == nil {
		k.mu.Lock()
		holds := make([]H, 0, len(k.holds))
		for h := range k.holds {
			holds = append(holds, h)
		}
		k.mu.Unlock()
		k.env.RefreshFailed(holds, err)
	}
	var lost []H
	k.mu.Lock()
	for _, h := range k.heldLocked(s) {
		if slices.Contains(lapsed, h.Key()) {
			lost = append(lost, h)
		}
	}
	k.capLocked(s)
	k.mu.Unlock()
	var ended []H
	for _, h := range lost {
		if k.lose(h, fmt.Errorf("%w: the segment of %q lapsed", k.env.Errors.Lost, h.Key())) {
			ended = append(ended, h)
		}
	}
	k.endLapsedLater(ended)
}

// lose ends h, an active hold, without its caller, stops counting it,
// and reports the loss; it reports whether it ended h.
func (k *Keeper[H]) lose(h H, reason error) bool {
	if !h.MarkLost(reason) {
		return false
	}
	k.Remove(h)
	h.TellLost()
	return true
}

// endLapsedLater tells Env.Lapsed of holds, lost to a lapse of their
// segment, a margin from now. A lapse ends a hold, not its session:
// without an end, its claim would hold its key for as long as the
// session lives, which the Client's other holds and waits keep renewing.
// The end is safe however late it lands: the hold's work was told to stop
// (Lost()) before it is sent, and nothing of this process relies on the
// claim any more.
func (k *Keeper[H]) endLapsedLater(holds []H) {
	if len(holds) == 0 || k.env.Lapsed == nil {
		return
	}
	k.p.Clock.AfterFunc(k.p.Margin, func() {
		for _, h := range holds {
			k.env.Lapsed(h)
		}
	})
}

// coverLocked is when the coverage of key's segment ends, as a local
// reading on the lease's scale (judged from the latest possible store
// time: early); k.mu must be held.
func (k *Keeper[H]) coverLocked(key string) time.Duration {
	end := k.env.CoverEnd(key)
	if end.IsZero() {
		return 0
	}
	return k.mono(k.p.Clock.Now()) + end.Sub(k.env.ServerLatest())
}

// coveredLocked reports whether h's key stays covered past s's deadline,
// so that a hold that starts now relies on nothing that ends before its
// session; k.mu must be held.
func (k *Keeper[H]) coveredLocked(h H, s *Session[H]) bool {
	return k.coverLocked(h.Key()) >= s.lease.Deadline()
}
