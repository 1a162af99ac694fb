package dsync

import "sync"

// Semaphores whose processes disagree on the limit are not refused: the
// claims of each limit take turns (see Semaphore). That is safe but slow,
// and nearly always a mistake (a limit changed by a rolling restart, or
// configured differently), so a Semaphore warns when one of its claims
// waits behind a claim of another limit: once per Semaphore and other
// limit, to its Client's logger (a configuration matter, not the key's).

// maxLimitWarnings bounds the other limits remembered; past it they are
// forgotten, and warned about again.
const maxLimitWarnings = 64

// limitWarnings is a Semaphore's memory of the other limits it warned
// about.
type limitWarnings struct {
	mu     sync.Mutex
	warned map[int64]bool
}

// blockedBy warns if a claim of s waits behind a weighted claim (of epoch)
// of another limit: once per Semaphore and other limit.
func (s *Semaphore) blockedBy(by claimTerms, epoch uint64) {
	if !isWeighted(by) || by.Limit == s.limit {
		return
	}
	w := &s.limits
	w.mu.Lock()
	if w.warned == nil || len(w.warned) >= maxLimitWarnings {
		w.warned = make(map[int64]bool)
	}
	seen := w.warned[by.Limit]
	w.warned[by.Limit] = true
	w.mu.Unlock()
	if !seen {
		s.client.Logger().Warn("dsync: semaphore limits differ: claims of each limit take turns until every process agrees",
			"key", s.key, "limit", s.limit, "other", by.Limit, "token", epoch)
	}
}
