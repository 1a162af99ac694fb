package dsync

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// spanError turns err, if it says that the store's bucket span is not
// this process's, into an error wrapping ErrSpan that says what to
// change (spanSet: the process set its span with ClientWithBucketSpan);
// any other err is returned as it is. Every process of a store
// must use one span (see dsync/internal/queue): a process configured with
// another is refused when it starts, and a running process is refused
// when the store, emptied, was written first by a process of another
// span.
func spanError(spanSet bool, err error) error {
	var se *queue.SpanError
	switch {
	case errors.As(err, &se) && spanSet:
		return fmt.Errorf("%w: the store uses %v, this process %v (ClientWithBucketSpan): give every process of the store the same span, or none to adopt the store's (%w)",
			ErrSpan, se.Store, se.Engine, err)
	case errors.As(err, &se):
		return fmt.Errorf("%w: the store uses %v, this process %v, which the store used when this process started (the store was emptied since, and first written by a process configured with %v): restart this process to adopt the store's span, and give every process of the store the same span (ClientWithBucketSpan) (%w)",
			ErrSpan, se.Store, se.Engine, se.Store, err)
	case errors.Is(err, queue.ErrSpan):
		return fmt.Errorf("%w (%w)", ErrSpan, err)
	}
	return err
}

// ttlSpanError says that the lease is longer than the store's bucket
// span allows: a hold must end within one span of the store's time (see
// ClientWithBucketSpan). It says what to change, not why.
func ttlSpanError(ttl, span time.Duration) error {
	return fmt.Errorf("dsync: TTL %v is longer than this store allows: use a TTL of at most %v (the store's bucket span; a program can give a new store a longer one, with ClientWithBucketSpan)", ttl, span)
}
