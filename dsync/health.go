package dsync

import "time"

// Health reports whether c's lease is renewed on time. It returns nil, or
// an error if the lease is in use (it holds or awaits something) and its
// last confirmed renewal was sent more than its renew interval plus maxLag
// ago. Such a process is about to lose its holds, or already serves nothing
// but stale ones; restarting it (a liveness probe) or routing away from it
// hands its locks and leadership to a healthy process
// (statuspage.HealthHandler serves it to a probe). A Client that holds
// and awaits nothing is healthy. This is what client-go's leader election
// offers as its HealthzAdaptor.
func (c *Client) Health(maxLag time.Duration) error {
	return c.keeper.Health(maxLag)
}
