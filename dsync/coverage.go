package dsync

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Coverage: a hold relies on its key's segment being covered (its gates,
// internal/queue) as on its session, so the keeper caps the lease at the
// earliest coverage of the keys held, and extends that coverage beside
// its renewals.

// capLocked caps s's lease at the earliest coverage of the keys its holds
// rely on (none: no cap). A key whose coverage is unknown (coverLocked's
// 0: its knowledge was dropped) caps it at once, whatever the other keys
// held. k.mu must be held.
func (k *keeper) capLocked(s *session) {
	cp, held := time.Duration(0), false
	for h := range k.holds {
		if h.sess != s {
			continue
		}
		if c := k.coverLocked(h.claim.Key); !held || c < cp {
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
func (k *keeper) refreshAsync(s *session) {
	k.mu.Lock()
	if s.refreshing {
		k.mu.Unlock()
		return
	}
	s.refreshing = true
	k.mu.Unlock()
	k.client.running.Add(1)
	go func() {
		defer k.client.running.Done()
		ctx, cancel := context.WithTimeout(s.ctx, max(k.lease.ttl, k.client.eng.Span()/2))
		defer cancel()
		k.refresh(ctx, s)
		k.mu.Lock()
		s.refreshing = false
		k.mu.Unlock()
	}()
}

// refresh extends the coverage of the keys of s's active holds, loses
// the holds whose key's segment lapsed, and caps s's lease at the
// earliest coverage left.
func (k *keeper) refresh(ctx context.Context, s *session) {
	k.mu.Lock()
	var keys []string
	for h := range k.holds {
		if h.sess == s {
			keys = append(keys, h.claim.Key)
		}
	}
	k.mu.Unlock()
	if len(keys) == 0 {
		k.mu.Lock()
		s.lease.SetCap(0)
		k.mu.Unlock()
		return
	}
	lapsed, err := k.client.eng.Refresh(ctx, keys)
	if err != nil && s.ctx.Err() == nil {
		k.report(fmt.Errorf("dsync: keep segments covered: %w", spanError(k.client.cfg.spanSet, err)))
	}
	var lost []*hold
	k.mu.Lock()
	for h := range k.holds {
		if h.sess == s && slices.Contains(lapsed, h.claim.Key) {
			lost = append(lost, h)
		}
	}
	k.capLocked(s)
	k.mu.Unlock()
	for _, h := range lost {
		h.lose(fmt.Errorf("%w: the segment of %q lapsed", ErrLost, h.claim.Key))
	}
}

// coverLocked is when the engine's coverage of key's segment ends, as a
// local reading on the lease's scale (judged from the latest possible
// store time: early); k.mu must be held.
func (k *keeper) coverLocked(key string) time.Duration {
	end := k.client.eng.CoverEnd(key)
	if end.IsZero() {
		return 0
	}
	return k.mono(k.lease.clock.Now()) + end.Sub(k.client.store.ServerTime().Latest)
}

// coveredLocked reports whether h's key stays covered past s's deadline,
// so that a hold that starts now relies on nothing that ends before its
// session; k.mu must be held.
func (k *keeper) coveredLocked(h *hold, s *session) bool {
	return k.coverLocked(h.claim.Key) >= s.lease.Deadline()
}
