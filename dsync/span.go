package dsync

import (
	"errors"
	"fmt"

	"github.com/go-dsync/dsync/internal/queue"
)

// spanError turns err, if it says that the store's bucket span is not
// this process's, into an error wrapping ErrSpan that says what to
// change (spanSet: the process set its span with ClientWithBucketSpan);
// any other err is returned as it is. Every process of a store
// must use one span (see internal/queue): a process configured with
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
