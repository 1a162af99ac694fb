package dsync

import (
	"fmt"
	"net/http"
	"time"
)

// Health reports whether c's lease is renewed on time. It returns nil, or
// an error if the lease is in use (it holds or awaits something) and its
// last confirmed renewal was sent more than its renew interval plus maxLag
// ago. Such a process is about to lose its holds, or already serves nothing
// but stale ones; restarting it (a liveness probe) or routing away from it
// hands its locks and leadership to a healthy process. A Client that holds
// and awaits nothing is healthy. This is what client-go's leader election
// offers as its HealthzAdaptor.
func (c *Client) Health(maxLag time.Duration) error {
	return c.keeper.Health(maxLag)
}

// HealthHandler serves c.Health(maxLag) over HTTP, for a liveness or
// readiness probe. It answers status 200 and "ok", or 503 Service
// Unavailable and the error.
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
