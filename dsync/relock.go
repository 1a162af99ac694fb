package dsync

import (
	"context"
	"sync"
	"time"
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
// So a primitive whose exclusive claim (a Mutex's, a writer's, a Once's,
// an election's) locks again less than the poll interval
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

// A takeover is how a primitive's exclusive claim came to hold: after the
// release of another owner's claim.
type takeover struct {
	pred string        // the owner of the released claim
	mine uint64        // the epoch that then held
	at   time.Duration // the Client's monotonic time: when it found that it held
}

// relockState is a primitive's last takeover, until its next claim.
type relockState struct {
	mu   sync.Mutex
	took takeover
	ok   bool
}

// tookOver records how p's exclusive claim of epoch came to hold: after
// the release of after's claim ("" when nothing ended just below it).
func (p *core) tookOver(epoch uint64, after string) {
	p.relock.mu.Lock()
	defer p.relock.mu.Unlock()
	if after == "" || after == p.owner {
		p.relock.ok = false
		return
	}
	p.relock.took, p.relock.ok = takeover{pred: after, mine: epoch, at: p.client.mono()}, true
}

// lastTakeover returns and forgets p's last takeover.
func (p *core) lastTakeover() (takeover, bool) {
	p.relock.mu.Lock()
	defer p.relock.mu.Unlock()
	t, ok := p.relock.took, p.relock.ok
	p.relock.ok = false
	return t, ok
}

// afterPredecessor lets the owner that p last took its key over from
// claim first, if that was less than the relock window ago (see above).
// The claims it reads count as seen, so the claim that follows inserts
// above the last one found.
func (p *core) afterPredecessor(ctx context.Context) {
	t, ok := p.lastTakeover()
	if !ok {
		return
	}
	c := p.client
	until := t.at + relockWindow(&c.cfg)
	pause, misses := relockPoll, 0
	epoch := t.mine + 1
	for range maxRelockReads {
		if c.mono() >= until {
			return
		}
		// Reading the claim counts it as seen, so the next claim of the
		// key inserts above it.
		d, found, err := c.eng.ReadClaim(ctx, p.stored, epoch)
		switch {
		case err != nil:
			return
		case found && d.Owner == t.pred:
			return
		case found:
			epoch++
			continue
		}
		// Until an event shows that the epoch may have been claimed, or
		// the pause: false if ctx ended first.
		if !c.wake.AwaitClaim(ctx, p.stored, epoch, min(pause, until-c.mono())) {
			return
		}
		if misses++; misses >= relockFastReads {
			pause *= 2
		}
	}
}

// relockWindow is how long after a takeover a Mutex that locks again waits
// for the owner it took over from: the poll interval, unless a test set
// it.
func relockWindow(cfg *clientConfig) time.Duration {
	if cfg.test.relockWindow > 0 {
		return cfg.test.relockWindow
	}
	return cfg.poll
}
