package dsync

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/internal/chain"
)

// Locking again right after a takeover.
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
// So a Mutex that locks again less than the poll interval
// (ClientWithPollInterval) after it took the key over from another owner's
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

// relockPoll is the pause before a Mutex that waits for the owner it took
// over from to claim again reads again, when no event shows it; it
// doubles after relockFastReads reads that found nothing.
const (
	relockPoll      = 5 * time.Millisecond
	relockFastReads = 4
)

// maxRelockReads bounds the claims read on the way to that owner's.
const maxRelockReads = 32

// maxTakeovers bounds the takeovers remembered; past it they are
// forgotten.
const maxTakeovers = 4096

// A takeover is how a Mutex came to hold a key: after the release of
// another owner's claim.
type takeover struct {
	pred string        // the owner of the released claim
	mine uint64        // the epoch that then held
	at   time.Duration // local monotonic: when it found that it held
}

type ownerKey struct{ key, owner string }

// relocks remembers the takeovers of a Client's Mutexes until their next
// Claim.
type relocks struct {
	mu   sync.Mutex
	took map[ownerKey]takeover
}

// tookOver records how owner's claim c of key, of epoch, came to hold, at
// at: after the release of another owner's claim, or not.
func (r *relocks) tookOver(key, owner string, epoch uint64, c *chain.Claim, at time.Duration) {
	k := ownerKey{key, owner}
	prev, ok := c.After()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok || prev.Owner == owner {
		delete(r.took, k)
		return
	}
	if r.took == nil || len(r.took) >= maxTakeovers {
		r.took = make(map[ownerKey]takeover)
	}
	r.took[k] = takeover{pred: prev.Owner, mine: epoch, at: at}
}

// take returns and forgets owner's last takeover of key.
func (r *relocks) take(key, owner string) (takeover, bool) {
	k := ownerKey{key, owner}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.took[k]
	delete(r.took, k)
	return t, ok
}

// afterPredecessor lets the owner that owner's Mutex last took key over
// from claim first, if that was less than the poll interval ago (see
// above). The claims it reads count as seen, so the Claim that follows
// inserts above the last one found.
func (c *Client) afterPredecessor(ctx context.Context, key, owner string) {
	t, ok := c.relock.take(key, owner)
	if !ok {
		return
	}
	until := t.at + c.relockWindow()
	pause, misses := relockPoll, 0
	epoch := t.mine + 1
	for range maxRelockReads {
		if c.mono() >= until {
			return
		}
		d, found, err := c.eng.ReadClaim(ctx, key, epoch)
		switch {
		case err != nil:
			return
		case found && d.Owner == t.pred:
			return
		case found:
			epoch++
			continue
		}
		if !c.wake.awaitClaim(ctx, key, epoch, min(pause, until-c.mono())) {
			return
		}
		if misses++; misses >= relockFastReads {
			pause *= 2
		}
	}
}

// relockWindow is how long after a takeover a Mutex that locks again waits
// for the owner it took over from: the poll interval.
func (c *Client) relockWindow() time.Duration {
	if c.cfg.relockWindow > 0 {
		return c.cfg.relockWindow
	}
	return c.cfg.poll
}
