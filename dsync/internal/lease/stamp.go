package lease

import "context"

// Stamps on demand: a waiter that finds a claim's session expired, but
// not yet proven dead by the store's record of up-time (an owner with an
// outage grace: queue's doc_outage.go), needs a stamp the store applied
// after that expiry. The waiter's own session's renewals are such stamps;
// on their schedule (every TTL/3) the next may come a third of a TTL
// late, which a crashed holder's failover would pay. Stamp renews at
// once instead.

// Stamp asks for a renewal of the current session sent now, and waits
// until one sent after the call is back, confirmed or not, or until ctx
// ends. It reports whether such a renewal came back: false also when
// there is nothing to renew (no session, none being renewed, suspended,
// retired, or the Keeper closed), at once. Renewals asked for together
// share one request, and one under way when Stamp is called does not
// count: it may have been sent before the expiry the caller needs a
// stamp after.
func (k *Keeper[H]) Stamp(ctx context.Context) bool {
	k.mu.Lock()
	s := k.sess
	if k.closed || !k.running || s == nil || s.retired || s.lease.Suspended() || !k.busyLocked() {
		k.mu.Unlock()
		return false
	}
	back := make(chan bool, 1)
	k.stamps = append(k.stamps, back)
	k.signalLocked()
	k.mu.Unlock()
	select {
	case ok := <-back:
		return ok
	case <-ctx.Done():
		return false
	}
}

// takeStamps returns the Stamp calls waiting for the renewal about to be
// sent, which answers them once it is back.
func (k *Keeper[H]) takeStamps() []chan bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.takeStampsLocked()
}

// takeStampsLocked is takeStamps with k.mu held.
func (k *Keeper[H]) takeStampsLocked() []chan bool {
	st := k.stamps
	k.stamps = nil
	return st
}

// answerStamps tells Stamp calls whether their renewal came back (false:
// none will be sent).
func answerStamps(st []chan bool, back bool) {
	for _, c := range st {
		c <- back
	}
}
