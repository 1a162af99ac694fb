package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
)

// The doctor's checks of the lock collection and the server's clock and
// elections: what each finds, and what to do about it.

// index: the lock collection's index exists, or can be created.
func (d *doctor) index(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var x indexes
	names, err := d.s.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: d.s.cfg.collection}})
	if err == nil && len(names) > 0 {
		x, err = d.s.platform.findIndex(ctx)
	}
	var se mongo.ServerError
	switch {
	case err == nil && len(names) == 0,
		err != nil && errors.As(err, &se) && se.HasErrorCode(26): // NamespaceNotFound
		d.add(Finding{Check: "lock index", Status: Pass, Found: fmt.Sprintf("collection %q does not exist yet: the first lock creates it and its index", d.s.cfg.collection)})
	case err != nil && d.unauthorized("listCollections and listIndexes on "+d.s.cfg.collection, err):
		d.add(Finding{Check: "lock index", Status: Fail, Found: "listing the collection's indexes was refused: " + err.Error(), Fix: "grant listCollections, listIndexes and createIndex (see privileges)"})
	case err != nil:
		d.add(Finding{Check: "lock index", Status: Warn, Found: "listing the indexes failed: " + err.Error()})
	case x.blocking != "":
		d.add(Finding{Check: "lock index", Status: Fail, Found: "the unique index " + x.blocking + " refuses end markers" + x.v1Hint(), Fix: "drop that index (see docs/operations.md), or use another collection (WithCollection)"})
	case x.equivalent != "":
		d.add(Finding{Check: "lock index", Status: Pass, Found: fmt.Sprintf("index %q on {key: 1, kind: 1, epoch: 1}", x.equivalent)})
	case x.conflict != "":
		d.add(Finding{Check: "lock index", Status: Fail, Found: "the " + x.conflict + " is not equivalent to dsync's lock index", Fix: "drop it, or use another collection (WithCollection)"})
	default:
		d.add(Finding{Check: "lock index", Status: Warn, Found: "no index on {key: 1, kind: 1, epoch: 1} yet", Fix: "the first lock creates it (createIndex privilege); with WithIndexManagement(false), create it beforehand"})
	}
}

// sharding: through a mongos, the collections are sharded only in ways
// that keep exclusion.
func (d *doctor) sharding(ctx context.Context) {
	if d.topo.kind != "mongos" {
		d.add(Finding{Check: "sharding", Status: Pass, Found: "not a sharded cluster"})
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := d.s.platform.checkSharding(ctx)
	switch {
	case err == nil:
		d.add(Finding{Check: "sharding", Status: Pass, Found: "the lock, sessions and keys collections are unsharded, or sharded on keys dsync allows"})
	case errors.Is(err, ErrSharded):
		d.add(Finding{Check: "sharding", Status: Fail, Found: err.Error(), Fix: "use another collection (WithCollection), unsharded or sharded on key"})
	default:
		d.unauthorized("find on config.collections", err)
		d.add(Finding{Check: "sharding", Status: Warn, Found: err.Error(), Fix: "grant find on config.collections, so that dsync can check the shard keys"})
	}
}

// privileges: what the server refused in the checks above.
func (d *doctor) privileges() {
	if len(d.denied) == 0 {
		d.add(Finding{Check: "privileges", Status: Pass, Found: "nothing the checks did was refused"})
		return
	}
	d.add(Finding{Check: "privileges", Status: Fail, Found: fmt.Sprintf("refused: %q", d.denied),
		Fix: "grant the role readWrite on the database (find, insert, update, remove, createCollection, createIndex, listIndexes), and find on config.collections on a sharded cluster"})
}

// clock: this machine's clock against the server's, and the member skew
// dsync assumes.
func (d *doctor) clock(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := clockcheck.Measure(ctx, d.s.db)
	switch {
	case err != nil:
		d.add(Finding{Check: "clock", Status: Warn, Found: "could not measure: " + err.Error()})
	case s.Offset.Abs()-s.Uncertainty > clockcheck.DefaultMaxOffset:
		d.add(Finding{Check: "clock", Status: Warn, Found: fmt.Sprintf("this machine's clock is %v off the server's (±%v)", s.Offset.Round(time.Millisecond), s.Uncertainty.Round(time.Millisecond)),
			Fix: "locks do not depend on it (expiry is judged in server time), but logs and member status do: fix this machine's time synchronization"})
	default:
		d.add(Finding{Check: "clock", Status: Pass, Found: fmt.Sprintf("this machine's clock is %v off the server's (±%v)", s.Offset.Round(time.Millisecond), s.Uncertainty.Round(time.Millisecond))})
	}
	if d.topo.kind == "standalone" {
		return
	}
	d.add(Finding{Check: "member skew", Status: Pass,
		Found: fmt.Sprintf("dsync assumes the members' clocks within %v of each other (WithMemberSkew); it cannot measure them from here", d.s.platform.memberSkew(map[string]topology{"replica set": topologyReplicas, "mongos": topologySharded}[d.topo.kind])),
		Fix:   "keep NTP on every member; measure one with: dsync clock --uri 'mongodb://MEMBER/?directConnection=true'"})
}

// failover: whether a hold outlasts a primary election.
func (d *doctor) failover(ctx context.Context) {
	if d.topo.kind == "standalone" {
		d.add(Finding{Check: "failover", Status: Pass, Found: "a standalone server has no elections (see server)"})
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	timeout, known := defaultElectionTimeout, false
	if d.topo.kind == "replica set" {
		raw, err := d.s.db.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Raw()
		if err == nil {
			if ms, ok := raw.Lookup("config", "settings", "electionTimeoutMillis").AsInt64OK(); ok && ms > 0 {
				timeout, known = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
	d.add(failoverFinding(timeout, known, d.cfg.TTL, d.cfg.RenewInterval, d.cfg.OutageGrace))
}

// failoverFinding judges whether a hold outlasts an election that starts
// electionTimeout after the primary stops answering: in the worst case
// the last confirmed renewal was sent a renew interval before, and the
// hold's deadline is TTL − TTL/20 after that send. Past it, an outage
// grace at least as long as the election has the hold taken back with
// its token once the new primary serves.
func failoverFinding(electionTimeout time.Duration, known bool, ttl, renew, grace time.Duration) Finding {
	election := electionTimeout + electionTime
	left := ttl - driver.Margin(ttl) - renew
	source := fmt.Sprintf("electionTimeoutMillis %d", electionTimeout.Milliseconds())
	if !known {
		source = fmt.Sprintf("MongoDB's default electionTimeoutMillis %d (replSetGetConfig was not available)", electionTimeout.Milliseconds())
	}
	found := fmt.Sprintf("a primary election takes about %v (%s, plus about %v); a hold with TTL %v and renew interval %v lasts at least %v without a renewal",
		election, source, electionTime, ttl, renew, left)
	switch {
	case left > election:
		return Finding{Check: "failover", Status: Pass, Found: found + ": holds ride through an election"}
	case grace >= election:
		return Finding{Check: "failover", Status: Pass, Found: found + fmt.Sprintf(
			"; with an outage grace of %v, holds ride through an election: Lost() may close in it, and a Mutex locked again (Campaign called again) takes the hold (the term) back with its token once the new primary serves", grace)}
	}
	// TTL × (1 − 1/MarginDivisor − 1/3) must exceed the election, with
	// the renew interval at its default third of the TTL.
	need := time.Duration(math.Ceil(float64(election)/(1-1.0/driver.MarginDivisor-1.0/3)/float64(time.Second))) * time.Second
	return Finding{Check: "failover", Status: Warn, Found: found + fmt.Sprintf(", and the outage grace is %v: a hold can be lost during an election (Lost() closes, a leader steps down) and taken over", grace),
		Fix: fmt.Sprintf("give every process an outage grace of at least %v (dsync.ClientWithOutageGrace; dsync --outage-grace; the default is %v), or a TTL of at least %v (dsync.ClientWithTTL; dsync lock --ttl), at the cost of a crashed holder's lock waiting that long",
			election, defaultOutageGrace, need)}
}

// drop drops a scratch collection, best effort.
func drop(coll *mongo.Collection) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = coll.Drop(ctx)
}
