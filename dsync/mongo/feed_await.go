package dsyncmongo

import "time"

// How long the events' cursor waits: each getMore's bound, and how
// late its reply may come before the stream is taken for broken.

// getMoreSlack is how long past its wait a getMore of the event cursor
// may take to come back before the stream is taken for broken (and
// reopened).
const getMoreSlack = 5 * time.Second

// awaitTime is how long the next getMore of the event cursor waits for an
// event: the event await (WithEventAwait), or at most ferretAwait on FerretDB while
// other processes wait (their cursors are what makes long getMores costly
// there; a process that follows the stream alone costs FerretDB little):
// while an announcement the stream showed holds and neither the claim it
// names nor the waiter's own claim has been seen to end (feed_waits.go),
// or for othersWaitGrace after it showed one.
func (t *tailer) awaitTime() time.Duration {
	safety := t.f.cfg.eventAwait
	if t.f.platform.isFerret() {
		at := time.Duration(t.othersWaitAt.Load())
		if at != 0 && t.f.cfg.mono()-at < othersWaitGrace {
			return min(safety, ferretAwait)
		}
		if t.othersWait.any(t.f.clock.serverTime().Earliest) {
			return min(safety, ferretAwait)
		}
	}
	return safety
}
