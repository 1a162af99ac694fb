package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
)

// Server time.
//
// Expiry is judged in the time of the server that applies the writes: a
// session's expiry is compared with it, and nothing else. The clock that
// answers hello is not always that one: behind a mongos (a sharded cluster,
// Atlas sharded and serverless clusters, often a mongos on every
// application host) or a load balancer, hello reports the router's clock,
// and routers run on hosts whose clocks may be far apart, which would bring
// back the client clock skew that server time exists to remove. So the
// estimator samples with a write: an upsert of one document of the
// sessions collection with $currentDate, read back in the same command
// (findAndModify). The write is applied by the primary that holds the
// sessions collection, whichever router forwards it, and $currentDate is
// that primary's clock when it applied it, within the command's round trip.
// Every process of a deployment samples the same primary.
//
// A failover moves the writes, and the samples, to another member. The
// store asks for a new sample at once when one of its commands fails in
// a way that says the primary may have changed (a not-primary error, a
// shutdown, a dropped connection); a failover that the driver hides (it
// retries a write once on the new primary by itself) is noticed at the
// next periodic re-sample, within a minute (with a member skew, every
// periodic sample replaces the one in use). Meanwhile, and always, every
// interval is wider by the bound on the skew between members' clocks
// (WithMemberSkew), so it holds the new primary's time too.
// FerretDB counts as one server (see the package doc).

// clockID is the _id of the document of the sessions collection that the
// server-time samples update. Session ids are xids, which never contain '#'.
const clockID = "#clock"

// DefaultMemberSkew is the default bound assumed on the skew of members'
// clocks. It is the bound assumed on how far apart the clocks of a replica
// set's members are (WithMemberSkew), on deployments with more than one
// server.
const DefaultMemberSkew = 100 * time.Millisecond

// A serverClock estimates the server's time: Prepare's estimator, which
// samples with a write (probe) and judges expiry, and PrepareRead's,
// which samples with hello and serves reads only (prepare_read.go). Each
// is started once, under the store's preparation lock; they are read
// anywhere.
type serverClock struct {
	db  *mongo.Database // hello, for PrepareRead's samples
	cfg *config
	// coll is the sessions collection with write concern 1, which holds
	// the samples' document (clockID).
	coll *mongo.Collection
	est  atomic.Pointer[clockcheck.Estimator]
	// readEst samples the server's clock with hello, for reads before
	// Prepare; nil once est exists.
	readEst atomic.Pointer[clockcheck.Estimator]
}

func newServerClock(db *mongo.Database, sessions *mongo.Collection, cfg *config) *serverClock {
	return &serverClock{db: db, cfg: cfg, coll: sessions.Clone(options.Collection().SetWriteConcern(clockWriteConcern))}
}

// start starts, once the deployment is known (its member skew, skew),
// the estimator that judges expiry, and retires PrepareRead's; the
// store's preparation lock is held.
func (c *serverClock) start(ctx context.Context, skew time.Duration) (*clockcheck.Estimator, error) {
	e, err := clockcheck.NewEstimator(ctx, nil, c.options(skew, clockcheck.WithProbe(c.probe))...)
	if err != nil {
		return nil, fmt.Errorf("dsyncmongo: measuring the server's clock: %w", err)
	}
	c.est.Store(e)
	c.retireRead()
	return e, nil
}

// forWrites returns the estimator that judges expiry; nil before start.
func (c *serverClock) forWrites() *clockcheck.Estimator { return c.est.Load() }

// serverTime is driver.Store's ServerTime, from forWrites (the zero
// Interval before it exists).
func (c *serverClock) serverTime() driver.Interval {
	e := c.est.Load()
	if e == nil {
		return driver.Interval{}
	}
	iv := e.Now()
	return driver.Interval{Earliest: iv.Earliest, Latest: iv.Latest}
}

// now is the midpoint of the server-time estimate, for what is shown
// (a session's start, a key's first use); zero before the estimator
// exists.
func (c *serverClock) now() time.Time {
	if e := c.est.Load(); e != nil {
		return midpoint(e.Now())
	}
	return time.Time{}
}

// close stops both estimators; the store's preparation lock is held.
func (c *serverClock) close() error {
	c.retireRead()
	if e := c.est.Load(); e != nil {
		return e.Close()
	}
	return nil
}

// probe is the estimator's clockcheck.Probe: one findAndModify that
// sets the clock document's "now" to the applying server's time and
// returns it. Write concern 1: only the primary's clock matters, and a
// sample's uncertainty is half its round trip, which waiting for a
// majority would widen. The update is harmless whenever it lands; its
// reply counts only for the round trip it came back in. (FerretDB 1.24
// computes $currentDate in the process that handles the command and
// returns the document it computed, so there too the time is that of the
// server that applied the update, during this call.) A transient failure
// (FerretDB's "database is locked" when processes start at once, a
// failover) is tried again, up to probeAttempts in all: the retry happens
// within the measured round trip, which only widens the sample.
func (c *serverClock) probe(ctx context.Context) (time.Time, error) {
	var now time.Time
	err := retry(ctx, c.cfg.logger, probeAttempts, "server-time sample", func() error {
		var err error
		now, err = c.probeOnce(ctx)
		return err
	})
	return now, err
}

// probeAttempts bounds the tries of one server-time sample: five, 300 ms
// of pauses in all. With three (60 ms), a dsync status that sampled the
// clock while four processes locked keys on FerretDB met "database is
// locked" three times in a row, and failed.
const probeAttempts = 5

func (c *serverClock) probeOnce(ctx context.Context) (time.Time, error) {
	if err := c.cfg.fault("probe"); err != nil {
		return time.Time{}, err
	}
	var d struct {
		Now time.Time `bson:"now"`
	}
	filter := bson.D{{Key: "_id", Value: clockID}}
	update := bson.D{{Key: "$currentDate", Value: bson.D{{Key: "now", Value: true}}}}
	// No projection: FerretDB's findAndModify has none, and the document
	// holds only its _id and now.
	opts := options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)
	err := c.coll.FindOneAndUpdate(ctx, filter, update, opts).Decode(&d)
	if mongo.IsDuplicateKeyError(err) {
		// Two first upserts raced; the document exists now.
		err = c.coll.FindOneAndUpdate(ctx, filter, update, opts).Decode(&d)
	}
	if err != nil {
		// Not noteFailure: a failed re-sample must not ask for another.
		return time.Time{}, err
	}
	if d.Now.IsZero() {
		return time.Time{}, fmt.Errorf("%w: $currentDate left no date in %s.%s", clockcheck.ErrNoLocalTime, c.coll.Name(), clockID)
	}
	return d.Now, nil
}

// noteFailure asks the estimator for a new sample at once if err says the
// server that applies the writes may have changed.
func (c *serverClock) noteFailure(err error) {
	if e := c.est.Load(); e != nil && primaryMayHaveChanged(err) {
		c.cfg.logger.Debug("dsyncmongo: the primary may have changed; sampling its clock again", slog.Any("err", err))
		e.ResampleNow()
	}
}

// notPrimaryCodes are the server errors of a member that is not, or no
// longer, primary, or is going away: NotWritablePrimary, NotPrimaryNoSecondaryOk,
// NotPrimaryOrSecondary, PrimarySteppedDown, InterruptedDueToReplStateChange,
// ShutdownInProgress, InterruptedAtShutdown.
var notPrimaryCodes = []int{10107, 13435, 13436, 189, 11602, 91, 11600}

// primaryMayHaveChanged reports whether err may come from a change of the
// primary: a not-primary or shutdown error, an error the server labels
// retryable (which it does during failovers), or a dropped connection.
func primaryMayHaveChanged(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		if se.HasErrorLabel("RetryableWriteError") {
			return true
		}
		for _, c := range notPrimaryCodes {
			if se.HasErrorCode(c) {
				return true
			}
		}
	}
	return mongo.IsNetworkError(err)
}

// clockWriteConcern is the probe's write concern (see probe).
var clockWriteConcern = writeconcern.W1()
