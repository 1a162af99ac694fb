package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/ferretdb"
)

// Doctor checks a deployment for dsync: what the server is, whether the
// writes dsync needs are acknowledged by a majority, whether wake-up
// events flow (and how fast), the lock collection's index and sharding,
// the privileges each of those needs, this machine's clock, and whether
// the lease outlasts a primary election. It writes only to two scratch
// collections named after the lock collection ("_doctor" and
// "_doctor_events"), which it drops again, and takes a few seconds.

// A Status is the outcome of one check.
type Status int

const (
	Pass Status = iota + 1 // nothing to do
	Warn                   // works, with a limit the finding states
	Fail                   // dsync cannot work as intended until it is fixed
)

func (s Status) String() string {
	switch s {
	case Pass:
		return "pass"
	case Warn:
		return "warn"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText writes the status as pass, warn or fail.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// A Finding is the outcome of one check of Doctor.
type Finding struct {
	Check  string `json:"check"`  // what was checked: "server", "write concern", ...
	Status Status `json:"status"` // pass, warn or fail
	Found  string `json:"found"`  // what was found
	Fix    string `json:"fix,omitempty"`
}

// DoctorConfig is what Doctor checks the deployment against. It is the
// lease of the locks that will run on it.
type DoctorConfig struct {
	TTL           time.Duration // the Client's lease (dsync.ClientWithTTL); must be positive
	RenewInterval time.Duration // dsync.ClientWithRenewInterval; a third of the TTL if zero
	// OutageGrace is the Client's outage grace (dsync.ClientWithOutageGrace):
	// dsync.DefaultOutageGrace if zero; negative: none.
	OutageGrace time.Duration
}

// electionTime is what a primary election takes beyond its timeout: the
// heartbeats that notice, the vote and the new primary's catch-up.
const electionTime = 2 * time.Second

// defaultOutageGrace is dsync.DefaultOutageGrace, which this package
// does not import (TestDoctorJudgesFailover checks they agree).
const defaultOutageGrace = 30 * time.Second

// defaultElectionTimeout is MongoDB's settings.electionTimeoutMillis.
const defaultElectionTimeout = 10 * time.Second

// wakeupWait bounds the wait for the test event.
const wakeupWait = 3 * time.Second

// Doctor runs the checks against db and returns what each found, in a fixed
// order. It uses the store options opts: the collection, the member skew,
// the write timeout, those the locks use. Each check is bounded; ctx bounds
// them all. It fails only on bad arguments.
func Doctor(ctx context.Context, db *mongo.Database, dc DoctorConfig, opts ...Option) ([]Finding, error) {
	if db == nil {
		return nil, ErrNilDatabase
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case dc.OutageGrace == 0:
		dc.OutageGrace = defaultOutageGrace
	case dc.OutageGrace < 0:
		dc.OutageGrace = 0
	}
	if dc.RenewInterval == 0 {
		dc.RenewInterval = dc.TTL / 3
	}
	if dc.TTL <= 0 || dc.RenewInterval < 0 || dc.RenewInterval >= dc.TTL-driver.Margin(dc.TTL) {
		return nil, fmt.Errorf("dsyncmongo: Doctor: TTL %v and renew interval %v: the renew interval must be positive and below the TTL less TTL/%d", dc.TTL, dc.RenewInterval, driver.MarginDivisor)
	}
	s := newStore(db, cfg)
	d := &doctor{s: s, cfg: dc}
	d.server(ctx)
	d.writeConcern(ctx)
	d.wakeups(ctx)
	d.index(ctx)
	d.sharding(ctx)
	d.privileges()
	d.clock(ctx)
	d.failover(ctx)
	return d.out, nil
}

type doctor struct {
	s      *Store
	cfg    DoctorConfig
	out    []Finding
	topo   deployment
	denied []string // what the server refused for want of privileges
}

func (d *doctor) add(f Finding) { d.out = append(d.out, f) }

// unauthorized records err if it is the server refusing op for want of a
// privilege (Unauthorized, 13), and reports whether it was.
func (d *doctor) unauthorized(op string, err error) bool {
	var se mongo.ServerError
	if errors.As(err, &se) && se.HasErrorCode(13) {
		d.denied = append(d.denied, op)
		return true
	}
	return false
}

// deployment is what hello says of the deployment, for the doctor.
type deployment struct {
	kind    string // "standalone", "replica set", "mongos"
	setName string
	members int
}

// readTopology reads hello's reply.
func readDeployment(hello bson.Raw) deployment {
	if msg, _ := hello.Lookup("msg").StringValueOK(); msg == "isdbgrid" {
		return deployment{kind: "mongos"}
	}
	if name, ok := hello.Lookup("setName").StringValueOK(); ok {
		t := deployment{kind: "replica set", setName: name}
		if hosts, ok := hello.Lookup("hosts").ArrayOK(); ok {
			vals, _ := hosts.Values()
			t.members = len(vals)
		}
		return t
	}
	return deployment{kind: "standalone"}
}

// server: what the server is, and where it is.
func (d *doctor) server(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hello, herr := d.s.db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	build, berr := d.s.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	if herr != nil {
		d.add(Finding{Check: "server", Status: Fail, Found: "hello failed: " + herr.Error(),
			Fix: "check the URI, the network path and the credentials"})
		return
	}
	d.topo = readDeployment(hello)
	d.add(serverFinding(d.topo, build, berr))
}

// serverFinding judges the server from its topology and buildInfo.
func serverFinding(t deployment, build bson.Raw, berr error) Finding {
	where := t.kind
	switch {
	case t.kind == "replica set":
		where = fmt.Sprintf("replica set %q of %d members", t.setName, t.members)
	case t.kind == "mongos":
		where = "a sharded cluster (through mongos)"
	}
	if berr != nil {
		return Finding{Check: "server", Status: Warn, Found: where + "; buildInfo refused (" + berr.Error() + "): version unknown",
			Fix: "nothing, unless the server is not MongoDB: dsync is tested on MongoDB and FerretDB"}
	}
	version, _ := build.Lookup("version").StringValueOK()
	if release, fv := ferretdb.Release(build); release != 0 {
		if fv == "" || fv == "unknown" {
			fv = "of unknown version"
		}
		return Finding{Check: "server", Status: Warn,
			Found: fmt.Sprintf("FerretDB %s, reporting MongoDB %s, %s: locks are safe; an update is a read and a later write, so fenced writes (fencemongo.Fence) are refused; finds read the whole collection, so a first Lock costs more with each key used within the idle age; each waiting process's cursor costs the server a query every 10 ms", fv, version, where),
			Fix:   "fine for development and modest use; run MongoDB (a replica set) where locks guard production work"}
	}
	f := Finding{Check: "server", Status: Pass, Found: fmt.Sprintf("MongoDB %s, %s", version, where)}
	if t.kind == "standalone" {
		f.Status = Warn
		f.Found += ": no failover; while this server is down every Lock waits and every hold is lost at its deadline"
		f.Fix = "run a replica set (three members) where locks guard production work"
	}
	return f
}

// scratch returns a scratch collection named after the lock collection,
// with the majority write concern and the store's write timeout.
func (d *doctor) scratch(suffix string) *mongo.Collection {
	wc := writeconcern.Majority()
	if d.s.cfg.wc != nil {
		wc = d.s.cfg.wc
	}
	return d.s.db.Collection(d.s.cfg.collection+suffix, options.Collection().SetWriteConcern(wc))
}

// writeConcern: a write with the write concern dsync uses is acknowledged
// within the write timeout.
func (d *doctor) writeConcern(ctx context.Context) {
	coll := d.scratch("_doctor")
	defer drop(coll)
	ctx, cancel := context.WithTimeout(ctx, max(d.s.cfg.writeTimeout, time.Second)+4*time.Second)
	defer cancel()
	start := time.Now()
	_, err := coll.InsertOne(ctx, bson.D{{Key: "doctor", Value: true}})
	took := time.Since(start).Round(time.Millisecond)
	wc := "majority"
	if d.s.cfg.wc != nil {
		wc = fmt.Sprint(d.s.cfg.wc.W)
	}
	switch {
	case err == nil && took > d.s.cfg.writeTimeout && d.topo.kind != "standalone":
		d.add(Finding{Check: "write concern", Status: Warn, Found: fmt.Sprintf("w:%s acknowledged in %v, over the write timeout %v", wc, took, d.s.cfg.writeTimeout),
			Fix: "writes that slow time out and are retried: raise WithWriteTimeout, or find the lagging members"})
	case err == nil:
		f := Finding{Check: "write concern", Status: Pass, Found: fmt.Sprintf("w:%s acknowledged in %v", wc, took)}
		if d.topo.kind == "standalone" {
			f.Found += " (a standalone server: majority is itself)"
		}
		d.add(f)
	case d.unauthorized("insert into "+coll.Name(), err):
		d.add(Finding{Check: "write concern", Status: Fail, Found: "insert refused: " + err.Error(),
			Fix: "grant readWrite on the database (see privileges)"})
	default:
		d.add(Finding{Check: "write concern", Status: Fail, Found: fmt.Sprintf("a w:%s insert failed after %v: %v", wc, took, err),
			Fix: "on a replica set, a majority of members must be reachable from the primary; check rs.status()"})
	}
}

// wakeups: a capped collection and a tailable cursor work, and how soon an
// event inserted reaches the cursor.
func (d *doctor) wakeups(ctx context.Context) {
	coll := d.scratch("_doctor_events")
	defer drop(coll)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second+wakeupWait)
	defer cancel()
	latency, err := d.eventLatency(ctx, coll)
	switch {
	case err == nil && latency < 250*time.Millisecond:
		d.add(Finding{Check: "wake-ups", Status: Pass, Found: fmt.Sprintf("capped collection and tailable cursor work; an event reached a waiting cursor in %v", latency.Round(time.Millisecond))})
	case err == nil:
		d.add(Finding{Check: "wake-ups", Status: Warn, Found: fmt.Sprintf("an event took %v to reach a waiting cursor", latency.Round(time.Millisecond)),
			Fix: "handoffs wait that long; a loaded server is the usual cause"})
	case d.unauthorized("create a capped collection", err):
		d.add(Finding{Check: "wake-ups", Status: Fail, Found: "refused: " + err.Error(),
			Fix: "grant createCollection on the database (see privileges), or create " + d.s.cfg.collection + eventsSuffix + " capped beforehand"})
	case unsupported(err):
		d.add(Finding{Check: "wake-ups", Status: Warn, Found: "the server has no capped collections or tailable cursors: " + err.Error(),
			Fix: "nothing to do: waiters poll (dsync.ClientWithPollInterval, 250 ms by default) instead of being woken"})
	default:
		d.add(Finding{Check: "wake-ups", Status: Warn, Found: "the test event did not arrive: " + err.Error(),
			Fix: "waiters fall back to polling (dsync.ClientWithPollInterval) while events do not flow"})
	}
}

// eventLatency creates coll capped, opens a tailable cursor on it and
// measures how long an event inserted takes to reach it.
func (d *doctor) eventLatency(ctx context.Context, coll *mongo.Collection) (time.Duration, error) {
	err := d.s.db.CreateCollection(ctx, coll.Name(), options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<16).SetMaxDocuments(100))
	if err != nil {
		return 0, err
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "n", Value: 0}}); err != nil {
		return 0, err
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetBatchSize(1).SetMaxAwaitTime(wakeupWait))
	if err != nil {
		return 0, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	if !cur.TryNext(ctx) { // the first event
		return 0, fmt.Errorf("the tailable cursor returned nothing: %v", cur.Err())
	}
	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		gctx, cancel := context.WithTimeout(ctx, wakeupWait+time.Second)
		defer cancel()
		if cur.TryNext(gctx) {
			got <- result{at: time.Now()}
			return
		}
		got <- result{err: fmt.Errorf("no event within %v: %v", wakeupWait, cur.Err())}
	}()
	time.Sleep(50 * time.Millisecond) // let the getMore wait
	sent := time.Now()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "n", Value: 1}}); err != nil {
		return 0, err
	}
	r := <-got
	if r.err != nil {
		return 0, r.err
	}
	return max(r.at.Sub(sent), 0), nil
}
