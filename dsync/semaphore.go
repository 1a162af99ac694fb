package dsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A Semaphore is a weighted semaphore shared by processes through a store.
// Every process that uses the same key on the same store shares it. It has
// the shape of golang.org/x/sync/semaphore.Weighted: at any instant the
// units held across every process are at most the limit. Its zero value is
// not usable: create it with NewSemaphore; every method of a zero Semaphore
// panics at once.
//
// Each Acquire is a claim of its own in the key's queue, which holds once
// the units of the claims queued before it that have not ended (holding
// or still waiting) plus its own fit the limit. Waiters are served first
// come first served, as x/sync's are: a large request that waits for room
// blocks the smaller ones queued after it. Units held by a process that
// dies come back when its session expires in the store (its lease, at
// most the TTL after its last renewal), as a crashed Mutex holder's lock
// does.
//
// The limit belongs to each claim: a process that disagrees on it (a
// limit changed by a rolling restart, or configured differently) is not
// refused. Claims of different limits exclude each other and take turns
// in queue order, so the units held at once always fit one limit, the
// limit of every claim holding them; while processes disagree, the
// semaphore drains before the other limit's claims hold. A process whose
// claim waits behind one of another limit logs a warning (at Warn, on
// its Client's logger, once per Semaphore and other limit).
//
// Acquisitions cannot be split: Release ends whole acquisitions. Each has
// a fencing token, unique to the key, that orders it against claims of
// another limit (which exclude it) but not against claims it shares the
// key with; Token reports the newest. Lost closes when any acquisition
// of the Semaphore is lost.
//
// Semaphore keys live in a namespace of their own ("dsync:sem/KEY").
type Semaphore struct {
	core
	limit int64
	holds holdSet
	// limits: the other limits this Semaphore warned about (blockedBy).
	limits limitWarnings
}

// NewSemaphore returns a Semaphore of limit units for key on c. The
// limit must be at least 1.
func NewSemaphore(c *Client, key string, limit int64, opts ...Option) (*Semaphore, error) {
	if limit < 1 {
		return nil, fmt.Errorf("dsync: semaphore limit must be at least 1, got %d", limit)
	}
	p, err := newCore(c, key, semNamespace, primSemaphore, opts)
	if err != nil {
		return nil, err
	}
	s := &Semaphore{core: p, limit: limit}
	s.lostHook = s.holds.onLost
	s.blocked = s.blockedBy
	return s, nil
}

// mustBeMade panics if s is a zero Semaphore (zero.go).
func (s *Semaphore) mustBeMade() {
	if s == nil || s.client == nil {
		zeroPanic("Semaphore")
	}
}

// Key returns the semaphore's key, as given to NewSemaphore.
func (s *Semaphore) Key() string {
	s.mustBeMade()
	return s.key
}

func (s *Semaphore) terms(n int64) (claimTerms, error) {
	switch {
	case n < 0:
		return claimTerms{}, fmt.Errorf("dsync: semaphore %q: acquire %d units: want at least 0", s.key, n)
	case n > s.limit:
		return claimTerms{}, fmt.Errorf("%w: semaphore %q: %d units, limit %d", ErrOverLimit, s.key, n, s.limit)
	}
	return weighted(n, claimLimit(s.limit)), nil
}

// Acquire acquires n units, blocking until they are held or ctx ends. On
// success it returns nil; when ctx ends first it returns
// context.Cause(ctx), unchanged unless store calls were failing (as
// Mutex.LockContext says), and holds nothing. It retries store errors meanwhile. A
// negative n is an error, and a request of more units than the limit
// fails at once with ErrOverLimit (x/sync's would block until ctx ends).
//
// Acquire(ctx, 0) acquires nothing: it returns context.Cause(ctx) if ctx
// has ended, and nil otherwise, at once, with no request to the store (so
// it does not wait, as x/sync's Acquire(ctx, 0) does, for the
// acquisitions queued before it). TryAcquire(0) and Release(0) are
// likewise no-ops that succeed.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	s.mustBeMade()
	t, err := s.terms(n)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if n == 0 {
		return nil
	}
	h, err := s.acquire(ctx, t, true, "")
	if err != nil {
		return err
	}
	s.holds.add(h)
	return nil
}

// TryAcquire acquires n units only if they are free at once; it never
// queues. It fails while the units held and awaited leave no room. It fails
// too while a claim of another limit holds or waits. It reports whether it
// succeeded (true for n = 0, which acquires nothing; false for n < 0 or
// more than the limit). Its one attempt is bounded by the try timeout, as
// Mutex.TryLock's is; TryAcquireContext says why it failed.
func (s *Semaphore) TryAcquire(n int64) bool {
	s.mustBeMade()
	return s.TryAcquireContext(context.Background(), n) == nil
}

// TryAcquireContext makes TryAcquire's one attempt, bounded by ctx as well.
// It says why it failed, as Mutex.TryLockContext does: an error wrapping
// ErrHeld (no room now), context.Cause(ctx) unchanged, or the store's
// error. For n < 0 or above the limit, it returns the error Acquire
// returns. For n = 0 it acquires nothing and returns nil, or
// context.Cause(ctx) if ctx has ended.
func (s *Semaphore) TryAcquireContext(ctx context.Context, n int64) error {
	s.mustBeMade()
	t, err := s.terms(n)
	if err != nil {
		return err
	}
	if n == 0 {
		return context.Cause(ctx)
	}
	h, err := s.try(ctx, t, "")
	if err != nil {
		return err
	}
	s.holds.add(h)
	return nil
}

// Release releases n units: whole acquisitions whose units add up to n. It
// releases one acquisition of exactly n units if there is one, else the
// oldest acquisitions that add up to n. It panics, as x/sync's does on
// releasing more than held, if no set of this Semaphore's acquisitions adds
// up to n (an acquisition cannot be split). Release(0) releases the empty
// set, which adds up to 0: nothing, as x/sync's Release(0) does. Errors are
// reported like Mutex.Unlock's; use ReleaseContext to see them.
func (s *Semaphore) Release(n int64) {
	s.mustBeMade()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.releaseTimeout())
	defer cancel()
	if err := s.ReleaseContext(ctx, n); err != nil && !errors.Is(err, ErrLost) {
		s.report(err)
	}
}

// ReleaseContext releases n units like Release and reports the outcome. It
// returns an error wrapping ErrLost if any of the acquisitions released had
// been lost. It returns the store's error for releases that could not be
// confirmed; their units then come back when the lease expires.
func (s *Semaphore) ReleaseContext(ctx context.Context, n int64) error {
	s.mustBeMade()
	if n == 0 {
		return nil
	}
	held := s.holds.take(func(holds []*hold) []int { return unitsOf(holds, n) })
	if held == nil {
		panic(fmt.Sprintf("dsync: semaphore %q: released %d units, which no set of its acquisitions adds up to (held: %d)", s.key, n, s.holds.weight()))
	}
	var errs []error
	for _, h := range held {
		if err := s.release(ctx, h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unitsOf picks the acquisitions (indexes into holds, oldest first) that
// Release(n) ends: one of exactly n if any, else the set that adds up to
// n whose oldest members are the oldest possible; nil if none does.
func unitsOf(holds []*hold, n int64) []int {
	if n < 1 {
		return nil
	}
	for i, h := range holds {
		if h.claim.Terms.Weight == n {
			return []int{i}
		}
	}
	// Depth first, taking the oldest first: the first set found is the
	// one whose oldest members are the oldest possible. dead remembers
	// the (position, units) that cannot be made up, so no state is
	// searched twice.
	type state struct {
		i int
		v int64
	}
	dead := make(map[state]bool)
	var pick []int
	var search func(i int, v int64) bool
	search = func(i int, v int64) bool {
		if v == 0 {
			return true
		}
		if i == len(holds) || dead[state{i, v}] {
			return false
		}
		if w := holds[i].claim.Terms.Weight; w <= v {
			pick = append(pick, i)
			if search(i+1, v-w) {
				return true
			}
			pick = pick[:len(pick)-1]
		}
		if search(i+1, v) {
			return true
		}
		dead[state{i, v}] = true
		return false
	}
	if !search(0, n) {
		return nil
	}
	return pick
}

// Lost returns a channel closed when any acquisition of s ends without a
// Release. See Mutex.Lost. When s holds nothing, Lost returns a closed
// channel.
func (s *Semaphore) Lost() <-chan struct{} {
	s.mustBeMade()
	return s.holds.lostChan()
}

// Token returns the token of s's newest acquisition, or 0 when s holds
// nothing.
func (s *Semaphore) Token() uint64 {
	s.mustBeMade()
	if h, ok := s.holds.newest(); ok {
		return h.claim.Epoch
	}
	return 0
}

// ValidUntil returns the earliest local deadline of s's acquisitions, on
// time.Now's scale. See Mutex.ValidUntil. It returns the zero Time when s
// holds nothing.
func (s *Semaphore) ValidUntil() time.Time {
	s.mustBeMade()
	return s.holds.validUntil(&s.core)
}

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
		s.client.cfg.logger.Warn("dsync: semaphore limits differ: claims of each limit take turns until every process agrees",
			"key", s.key, "limit", s.limit, "other", by.Limit, "token", epoch)
	}
}
