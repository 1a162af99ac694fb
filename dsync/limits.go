package dsync

import (
	"log/slog"
	"sync"

	"github.com/go-dsync/dsync/internal/chain"
)

// Semaphores whose processes disagree on the limit are not refused: the
// claims of each limit take turns (see Semaphore). That is safe but slow,
// and nearly always a mistake (a limit changed by a rolling restart, or
// configured differently), so a Client warns when one of its weighted
// claims waits behind a claim of another limit: once per key and pair of
// limits.

// maxLimitWarnings bounds the pairs remembered; past it they are
// forgotten, and warned about again.
const maxLimitWarnings = 1024

type limitWarnings struct {
	mu     sync.Mutex
	warned map[limitPair]bool
}

type limitPair struct {
	key         string
	mine, other int64
}

// check warns if cl, a weighted claim, waits behind blocker, a weighted
// claim of another limit.
func (w *limitWarnings) check(logger *slog.Logger, cl claimRef, blocker chain.Blocker) {
	if cl.Terms.Mode != chain.Weighted || blocker.Terms.Mode != chain.Weighted || blocker.Terms.Limit == cl.Terms.Limit {
		return
	}
	p := limitPair{cl.Key, cl.Terms.Limit, blocker.Terms.Limit}
	w.mu.Lock()
	if w.warned == nil || len(w.warned) >= maxLimitWarnings {
		w.warned = make(map[limitPair]bool)
	}
	seen := w.warned[p]
	w.warned[p] = true
	w.mu.Unlock()
	if !seen {
		logger.Warn("dsync: semaphore limits differ: claims of each limit take turns until every process agrees",
			"key", cl.Key, "limit", p.mine, "other", p.other, "token", blocker.Epoch)
	}
}
