package leader_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// TestCampaignFailsOnASpanMismatch: a candidate whose Client runs a
// bucket span other than the store's fails its Campaign at once with
// dsync.ErrSpan, instead of retrying until its context ends.
func TestCampaignFailsOnASpanMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		first := w.process(t, dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(10*time.Second))
		m, err := dsync.NewMutex(first.c, "job")
		if err != nil {
			t.Fatal(err)
		}
		m.Lock() // records a minute as the store's span
		defer m.Unlock()

		other := w.process(t, dsync.ClientWithBucketSpan(5*time.Minute), dsync.ClientWithTTL(10*time.Second))
		e, err := leader.NewElection(other.c, "svc")
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if _, err := e.Campaign(ctx); !errors.Is(err, dsync.ErrSpan) || ctx.Err() != nil {
			t.Fatalf("Campaign = %v (context: %v), want dsync.ErrSpan before the context ends", err, ctx.Err())
		}
	})
}
