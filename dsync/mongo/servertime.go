package dsyncmongo

import (
	"context"

	"github.com/go-dsync/dsync/clockcheck"
)

// ServerTime returns the interval the server's current time certainly lies
// in, from the estimate this backend judges expiry with (measuring the
// server's clock first if no call has yet).
func (b *Backend) ServerTime(ctx context.Context) (clockcheck.Interval, error) {
	est, err := b.prepare(ctx)
	if err != nil {
		return clockcheck.Interval{}, err
	}
	return est.Now(), nil
}
