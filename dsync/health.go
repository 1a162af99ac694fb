package dsync

import (
	"fmt"
	"net/http"
	"time"
)

// Health reports whether c's leases are renewed on time: nil, or an error
// naming a lease in use (one that holds or awaits something) whose last
// confirmed renewal was sent more than its renew interval plus maxLag
// ago. Such a process is about to lose its holds, or already serves
// nothing but stale ones; restarting it (a liveness probe) or routing away
// from it hands its locks and leadership to a healthy process. A Client
// that holds and awaits nothing is healthy. This is what client-go's
// leader election offers as its HealthzAdaptor.
func (c *Client) Health(maxLag time.Duration) error {
	c.mu.Lock()
	keepers := c.keeperListLocked()
	c.mu.Unlock()
	for _, k := range keepers {
		if err := k.health(maxLag); err != nil {
			return err
		}
	}
	return nil
}

// health is Health for k's session.
func (k *keeper) health(maxLag time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sess
	if s == nil || s.retired || !k.busyLocked() {
		return nil
	}
	if since := k.id.clock.Now().Sub(s.confirmed); since > k.id.interval+maxLag {
		return fmt.Errorf("dsync: the lease (TTL %v) has had no renewal confirmed for %v, renew interval %v: holds lapse %v after it",
			k.id.ttl, since.Round(time.Millisecond), k.id.interval, k.id.ttl-k.id.ttl/20)
	}
	return nil
}

// HealthHandler serves c.Health(maxLag) over HTTP: status 200 and "ok",
// or 503 Service Unavailable and the error, for a liveness or readiness
// probe.
func HealthHandler(c *Client, maxLag time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := c.Health(maxLag); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
