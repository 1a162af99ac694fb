package lease

import (
	"fmt"
	"time"
)

// Health reports whether the lease is renewed on time: nil, or an error
// if it is in use (its session holds or awaits something) and its last
// confirmed renewal was sent more than its renew interval plus maxLag
// ago (dsync's Client.Health).
func (k *Keeper[H]) Health(maxLag time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sess
	if s == nil || s.retired || !k.busyLocked() {
		return nil
	}
	if since := k.p.Clock.Now().Sub(s.confirmed); since > k.p.Interval+maxLag {
		return fmt.Errorf("dsync: the lease (TTL %v) has had no renewal confirmed for %v, renew interval %v: holds lapse %v after it",
			k.p.TTL, since.Round(time.Millisecond), k.p.Interval, k.p.TTL-k.p.Margin)
	}
	return nil
}

// Renewed reports whether a renewal of s was confirmed after its open:
// the store answered s in time at least once more. A waiter whose session
// was retired judges by it whether the store or the session failed it.
func (k *Keeper[H]) Renewed(s *Session[H]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return s.confirmed.After(s.opened)
}
