package lease

import (
	"fmt"
	"time"
)

// GraceSlack is how much of the bucket span an outage grace leaves beside
// the TTL (GraceFits).
const GraceSlack = 2 * time.Second

// GraceFits says whether an outage grace fits a bucket span: a suspended
// hold relies on its key's coverage, which lasts about a span, for up to
// the TTL and the grace (queue's doc_outage.go, O6). It returns nil if it
// fits, an error that says what to change if not.
func GraceFits(grace, ttl, span time.Duration) error {
	if grace == 0 || grace <= span-ttl-GraceSlack {
		return nil
	}
	return fmt.Errorf("dsync: outage grace %v is too long for the TTL %v and the store's bucket span %v: use at most %v (the span less the TTL less %v), or a longer span (ClientWithBucketSpan)",
		grace, ttl, span, max(span-ttl-GraceSlack, 0), GraceSlack)
}
