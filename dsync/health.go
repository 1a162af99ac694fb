package dsync

import (
	"fmt"
	"net/http"
	"time"
)

// Health reports whether c's lease is renewed on time: nil, or an error
// if the lease is in use (it holds or awaits something) and its last
// confirmed renewal was sent more than its renew interval plus maxLag
// ago. Such a process is about to lose its holds, or already serves
// nothing but stale ones; restarting it (a liveness probe) or routing away
// from it hands its locks and leadership to a healthy process. A Client
// that holds and awaits nothing is healthy. This is what client-go's
// leader election offers as its HealthzAdaptor.
func (c *Client) Health(maxLag time.Duration) error {
	return c.keeper.health(maxLag)
}

// health is Health for k's session.
func (k *keeper) health(maxLag time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sess
	if s == nil || s.retired || !k.busyLocked() {
		return nil
	}
	if since := k.lease.clock.Now().Sub(s.confirmed); since > k.lease.interval+maxLag {
		return fmt.Errorf("dsync: the lease (TTL %v) has had no renewal confirmed for %v, renew interval %v: holds lapse %v after it",
			k.lease.ttl, since.Round(time.Millisecond), k.lease.interval, k.lease.ttl-k.lease.margin)
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
