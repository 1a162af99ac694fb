// Package relock is a primitive's wait, when it locks again right after
// a takeover, for the owner it took its key over from to claim first, so
// that processes locking in a loop take turns in a strict rotation. It
// only reads the claims above the primitive's own and waits: what a claim
// is, and the proof that counts it, are unchanged. Package dsync gives it
// the reads and the waits (dsync/relock.go).
//
// Claims queue in the order their inserts land, and a Lock's insert lands
// some time after the call: after the duplicate keys it meets on the way
// to the end of the queue, or later still when FerretDB's SQLite keeps an
// insert waiting for its write lock while later ones pass (an insert sent
// tens of milliseconds before another can lose the epoch to it). Processes that
// lock and unlock in a loop call Lock right after their release, so the
// Locks of two of them in a row overlap: the first releases and locks
// again; the second takes over, releases and locks again a few commands
// later; both claims race for the same epoch, and when the second wins it
// holds before the first, whose Lock came earlier. Nothing on the server
// tells the second process that the first is locking again, so no choice
// of epochs can prevent that: the second has to wait for the first.
//
// So a primitive whose exclusive claim (a Mutex's, a writer's, a Once's,
// an election's) locks again less than the poll interval
// (dsync.ClientWithPollInterval) after it took the key over from another owner's
// release first looks for that owner's next claim: it reads by _id the
// claims above its own (as many reads as the duplicate keys its claim
// would otherwise have met), and claims above the last one found. If that
// owner's claim is not there yet, it reads again when an announcement or
// a claim of this process shows the queue grew, or after relockPoll
// (doubling after a few), until the poll interval since the takeover has
// passed; then it claims anyway: that owner is not locking again, or is
// slower than that. Processes locking in a loop thus queue again in the
// order they released, and take turns in a strict rotation.
//
// The wait costs nothing while other claims are ahead, and after a short
// hold taken over from a process that does not lock again it delays the
// next Lock by at most the poll interval. It only reads and waits: what a
// claim is, and the proof that counts it, are unchanged. An uncontended
// Lock (no takeover) does not wait and reads nothing more.
package relock

import (
	"context"
	"sync"
	"time"
)

// relockPoll is the pause before a primitive that waits for the owner it
// took over from to claim again reads again, when no event shows it; it
// doubles after relockFastReads reads that found nothing.
const (
	relockPoll      = 5 * time.Millisecond
	relockFastReads = 4
)

// maxRelockReads bounds the claims read on the way to that owner's.
const maxRelockReads = 32

// A Takeover is how a primitive's exclusive claim came to hold: after the
// release of another owner's claim.
type Takeover struct {
	pred string        // the owner of the released claim
	mine uint64        // the epoch that then held
	at   time.Duration // the Client's monotonic time: when it found that it held
}

// State is a primitive's last takeover, until its next claim. Its zero
// value has none.
type State struct {
	mu   sync.Mutex
	took Takeover
	ok   bool
}

// TookOver records how the exclusive claim of epoch, of the primitive
// whose owner is own, came to hold, at the monotonic time at: after the
// release of after's claim ("" when nothing ended just below it). A
// release of its own claim is no takeover.
func (s *State) TookOver(epoch uint64, after, own string, at time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if after == "" || after == own {
		s.ok = false
		return
	}
	s.took, s.ok = Takeover{pred: after, mine: epoch, at: at}, true
}

// Last returns and forgets the last takeover.
func (s *State) Last() (Takeover, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.took, s.ok
	s.ok = false
	return t, ok
}

// Env is what the wait reads and waits on, for one key.
type Env struct {
	// Mono is the Client's monotonic time.
	Mono func() time.Duration
	// Window is how long after a takeover the wait may last.
	Window time.Duration
	// ReadOwner reads the key's claim of epoch by ID: its owner, or
	// found false. Reading the claim counts it as seen, so the next
	// claim of the key inserts above it.
	ReadOwner func(ctx context.Context, epoch uint64) (owner string, found bool, err error)
	// AwaitClaim waits until an event shows that epoch may have been
	// claimed, or for d: false if ctx ended first.
	AwaitClaim func(ctx context.Context, epoch uint64, d time.Duration) bool
}

// AfterPredecessor lets the owner that t took the key over from claim
// first, if that was less than env.Window ago (see the package doc). The
// claims it reads count as seen, so the claim that follows inserts above
// the last one found.
func AfterPredecessor(ctx context.Context, t Takeover, env Env) {
	until := t.at + env.Window
	pause, misses := relockPoll, 0
	epoch := t.mine + 1
	for range maxRelockReads {
		if env.Mono() >= until {
			return
		}
		owner, found, err := env.ReadOwner(ctx, epoch)
		switch {
		case err != nil:
			return
		case found && owner == t.pred:
			return
		case found:
			epoch++
			continue
		}
		if !env.AwaitClaim(ctx, epoch, min(pause, until-env.Mono())) {
			return
		}
		if misses++; misses >= relockFastReads {
			pause *= 2
		}
	}
}
