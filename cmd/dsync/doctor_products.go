//go:build unix

package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/ferretdb"
)

// The look-alikes: servers that speak MongoDB's protocol and are not
// MongoDB. Each has quirks that change what dsync can do on it; the
// doctor recognises the product from what the server answers and says,
// for each quirk, what it means for dsync and what to do.

// product is a server the doctor tells apart.
type product int

const (
	productMongoDB    product = iota // MongoDB, or nothing the doctor knows better
	productDocumentDB                // Amazon DocumentDB
	productCosmosDB                  // Azure Cosmos DB for MongoDB (request units)
	productFerretDB2                 // FerretDB 2, on PostgreSQL with the DocumentDB extension
	productFerretDB1                 // FerretDB 1 on a backend its answers do not name
	productFerretDB1SQLite
	productFerretDB1PostgreSQL
)

// productCheck is the Check of the findings about the product.
const productCheck = "product"

// unauthorized is the server's code for a command refused for want of a
// privilege.
const unauthorized = 13

// lookAlikeFindings are the findings about the product behind db, after
// dsyncmongo.Doctor's.
func lookAlikeFindings(ctx context.Context, g *globals, db *mongo.Database) []dsyncmongo.Finding {
	uri, err := g.resolveURI()
	if err != nil {
		return nil
	}
	return productFindings(probeProduct(ctx, db, g.collection, uri))
}

// productAnswers is what the doctor asked the server to tell the products
// apart, and what the connection string asks of the client.
type productAnswers struct {
	hello        bson.Raw // nil when refused
	buildInfo    bson.Raw // nil when refused
	serverStatus bson.Raw // nil when refused
	// cappedErr is the server's refusal of a small capped collection, nil
	// when it made one.
	cappedErr error
	// plan is the queryPlanner of a find by _id on that collection: a
	// FerretDB 1 passes its backend's own plan through.
	plan bson.Raw
	// readPref is the connection string's read preference mode, "" when
	// it names none; retryWrites its retryWrites, nil when it names none.
	readPref    string
	retryWrites *bool
	// idPlans is what a find by _id on dsync's collections costs, asked
	// of FerretDB 1 on PostgreSQL only (doctor_pgindex.go).
	idPlans []idPlan
}

// probeProduct asks db's server what the recognition needs. It writes
// only to the scratch collection the wake-ups check uses (collection +
// "_doctor_events"), after that check dropped it, and drops it again.
func probeProduct(ctx context.Context, db *mongo.Database, collection, uri string) productAnswers {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var a productAnswers
	run := func(cmd bson.D) bson.Raw {
		raw, err := db.RunCommand(ctx, cmd, options.RunCmd().SetReadPreference(readpref.Primary())).Raw()
		if err != nil {
			return nil
		}
		return raw
	}
	a.hello = run(bson.D{{Key: "hello", Value: 1}})
	a.buildInfo = run(bson.D{{Key: "buildInfo", Value: 1}})
	a.serverStatus = run(bson.D{{Key: "serverStatus", Value: 1}})

	scratch := db.Collection(collection + "_doctor_events")
	_ = scratch.Drop(ctx)
	a.cappedErr = db.CreateCollection(ctx, scratch.Name(), options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<12))
	if a.cappedErr == nil {
		explain := run(bson.D{{Key: "explain", Value: bson.D{
			{Key: "find", Value: scratch.Name()},
			{Key: "filter", Value: bson.D{{Key: "_id", Value: "doctor"}}},
		}}})
		if doc, ok := explain.Lookup("queryPlanner").DocumentOK(); ok {
			a.plan = bson.Raw(doc)
		}
		_ = scratch.Drop(ctx)
	}

	opts := options.Client().ApplyURI(uri)
	if opts.ReadPreference != nil {
		a.readPref = opts.ReadPreference.Mode().String()
	}
	a.retryWrites = opts.RetryWrites
	if p, _ := recognise(a); p == productFerretDB1PostgreSQL {
		a.idPlans = probeIDPlans(ctx, db, collection)
	}
	return a
}

// recognise names the product from its answers: FerretDB by the fields it
// adds to buildInfo and serverStatus, as the store recognises it
// (internal/ferretdb) and, in 1.x, its backend by the plan it passes
// through (SQLite's EXPLAIN QUERY PLAN lines, PostgreSQL's JSON plan);
// Amazon DocumentDB and Azure Cosmos DB by the endpoints hello names
// (their members are the service's hosts), Cosmos DB also by the replica
// set name its accounts report.
func recognise(a productAnswers) (product, string) {
	if release, v := ferretDBRelease(a); release == 2 {
		return productFerretDB2, v
	} else if release == 1 {
		plan, _ := a.plan.Lookup("Plan").DocumentOK()
		lines, _ := a.plan.Lookup("Plan").ArrayOK()
		switch {
		case plan != nil:
			return productFerretDB1PostgreSQL, v
		case lines != nil:
			return productFerretDB1SQLite, v
		}
		return productFerretDB1, v
	}
	for _, h := range helloHosts(a.hello) {
		switch {
		case strings.HasSuffix(h, ".docdb.amazonaws.com"), strings.HasSuffix(h, ".docdb-elastic.amazonaws.com"):
			return productDocumentDB, ""
		case strings.HasSuffix(h, ".mongo.cosmos.azure.com"), strings.HasSuffix(h, ".documents.azure.com"):
			return productCosmosDB, ""
		}
	}
	if name, _ := a.hello.Lookup("setName").StringValueOK(); name == "globaldb" {
		return productCosmosDB, ""
	}
	return productMongoDB, ""
}

// ferretDBRelease is the release of FerretDB that buildInfo names, else
// serverStatus (0: neither names FerretDB), and the version named there.
func ferretDBRelease(a productAnswers) (int, string) {
	for _, reply := range []bson.Raw{a.buildInfo, a.serverStatus} {
		if release, v := ferretdb.Release(reply); release != 0 {
			return release, v
		}
	}
	return 0, ""
}

// helloHosts lists the host names hello gives (me, primary, hosts,
// passives), lower case, without ports.
func helloHosts(hello bson.Raw) []string {
	var out []string
	add := func(v bson.RawValue) {
		if s, ok := v.StringValueOK(); ok {
			if h, _, err := net.SplitHostPort(s); err == nil {
				s = h
			}
			out = append(out, strings.ToLower(s))
		}
	}
	add(hello.Lookup("me"))
	add(hello.Lookup("primary"))
	for _, key := range []string{"hosts", "passives"} {
		if arr, ok := hello.Lookup(key).ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				add(v)
			}
		}
	}
	return out
}

// productFindings says, for each quirk of the product the answers show,
// what it means for dsync and what to do; and what the connection
// string's own settings mean, on any server.
func productFindings(a productAnswers) []dsyncmongo.Finding {
	p, version := recognise(a)
	if version == "" || version == "unknown" {
		version = "(version not reported)"
	}
	var out findingList
	out.productQuirks(p, version, a)
	out.connStringSettings(p, a)
	return out
}

// A findingList collects the findings of the product check.
type findingList []dsyncmongo.Finding

func (l *findingList) add(status dsyncmongo.Status, found, fix string) {
	*l = append(*l, dsyncmongo.Finding{Check: productCheck, Status: status, Found: found, Fix: fix})
}

// noCapped says what the product name's refusal of capped collections
// means, unless the privileges check says it (the refusal was for want
// of a privilege), or none was refused.
func (l *findingList) noCapped(a productAnswers, name string) {
	var se mongo.ServerError
	if a.cappedErr == nil || errors.As(a.cappedErr, &se) && se.HasErrorCode(unauthorized) {
		return // the privileges check says what was refused
	}
	l.add(dsyncmongo.Warn,
		name+" has no capped collections (creating one was refused: "+a.cappedErr.Error()+"): dsync's wake-ups need one, so waiters poll: a released lock passes to a waiter at its next poll instead of at once",
		"nothing to change on the server; a shorter poll interval (dsync.ClientWithPollInterval) hands locks over sooner at the cost of more reads")
}

// productQuirks says what the quirks of product p, at version, mean for
// dsync.
func (l *findingList) productQuirks(p product, version string, a productAnswers) {
	switch p {
	case productDocumentDB:
		l.noCapped(a, "Amazon DocumentDB")
	case productCosmosDB:
		l.noCapped(a, "Azure Cosmos DB for MongoDB")
		l.add(dsyncmongo.Pass,
			"Azure Cosmos DB for MongoDB allows TTL indexes only on _ts (the time of a document's last write): dsync creates no TTL index and deletes what expires itself, so nothing it does needs one",
			"add no TTL index to dsync's collections: one on _ts would delete the documents of locks idle longer than it, held or not")
		l.add(dsyncmongo.Warn,
			"Azure Cosmos DB for MongoDB maps every write concern to the account's default consistency level: the majority writes dsync asks for are as durable as that level makes them, and with a consistency below strong across several regions a claim acknowledged before a regional failover can be lost, so that two processes hold one lock",
			"give the account holding dsync's collections strong consistency, or a single region")
	case productFerretDB2:
		l.noCapped(a, "FerretDB "+version)
	case productFerretDB1SQLite:
		l.add(dsyncmongo.Warn,
			"FerretDB "+version+" on SQLite (its query plans are SQLite's): write concern is accepted and ignored, and nothing is replicated: an acknowledged lock is as durable as the SQLite file on that one disk",
			"fine on one machine; where locks guard production work, run a MongoDB replica set, or FerretDB on PostgreSQL with a synchronous standby")
	case productFerretDB1PostgreSQL:
		l.add(dsyncmongo.Warn,
			"FerretDB "+version+" on PostgreSQL (its query plans are PostgreSQL's): write concern is accepted and ignored: an acknowledged lock is as durable as PostgreSQL's commit, and outlives a PostgreSQL failover only if a synchronous standby has it; several FerretDB front ends over one PostgreSQL are several clocks",
			"keep synchronous_commit on and set synchronous_standby_names on the primary; with several FerretDB front ends, set dsyncmongo.WithMemberSkew to the bound on their hosts' clock skew")
		*l = append(*l, idIndexFindings(a.idPlans)...)
	case productFerretDB1:
		l.add(dsyncmongo.Warn,
			"FerretDB "+version+" on a backend its answers do not name: write concern is accepted and ignored: an acknowledged lock is as durable as the backend's commit",
			"make the backend's commits durable and replicated where locks guard production work")
	}
}

// connStringSettings says what the connection string's read preference
// and retryable writes mean for dsync, on product p.
func (l *findingList) connStringSettings(p product, a productAnswers) {
	sample := ""
	if p == productDocumentDB {
		sample = ", as Amazon DocumentDB's sample connection strings do"
	}
	if a.readPref != "" && a.readPref != readpref.PrimaryMode.String() {
		l.add(dsyncmongo.Pass,
			"the connection string reads from "+a.readPref+sample+": dsync sends its own reads and writes to the primary whatever the connection string says, so locks are unaffected; other reads through this client may see the locks' documents late",
			"nothing for dsync; drop readPreference from the connection string if the application's own reads must be current")
	}
	if a.retryWrites != nil && !*a.retryWrites {
		fix := "nothing: dsync does not rely on the driver's retries"
		if p == productDocumentDB {
			fix = "nothing: keep retryWrites=false, which DocumentDB requires"
		}
		l.add(dsyncmongo.Pass,
			"retryable writes are off (retryWrites=false"+sample+"): the driver does not resend a write a failover cut off; dsync does not need it to: a claim whose outcome is unknown is withdrawn and made again, and renewals and releases are sent again by dsync itself, so a Lock under way at a failover only takes longer",
			fix)
	}
}
