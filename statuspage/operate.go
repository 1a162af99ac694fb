package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// What an operator does beside reading: compact the store, and probe a
// process's health. They are here, with the reads, rather than on the
// lock package's Client, which a lock user meets; they are not Reader's
// methods, since a Reader only reads.

// Compact deletes the documents of the keys of c's store idle for at
// least idle. A key is idle while nobody holds or waits for it; idle must
// be at least four bucket spans. Compact returns how many documents it
// deleted. A compacted key's next Lock starts afresh, with a token above
// every token the key had. It is safe from many processes at once; a
// Client with an idle age (dsync.ClientWithIdleAge) compacts in the
// background, so an operator needs it only to compact sooner. Unlike the
// reads it writes, and prepares the store (on MongoDB it creates its
// collections and indexes).
func Compact(ctx context.Context, c *dsync.Client, idle time.Duration) (int64, error) {
	return reads().Compact(c, ctx, idle)
}

// HealthHandler serves c.Health(maxLag) over HTTP, for a liveness or
// readiness probe. It answers status 200 and "ok", or 503 Service
// Unavailable and the error.
func HealthHandler(c *dsync.Client, maxLag time.Duration) http.Handler {
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
