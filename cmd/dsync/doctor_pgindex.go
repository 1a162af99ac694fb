//go:build unix

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// FerretDB 1 on PostgreSQL sends a find by _id as a containment test on
// the document's jsonb column, which its own B-tree _id index cannot
// serve: without the GIN index docs/deployments.md gives ("FerretDB on
// PostgreSQL"), every read of a Lock reads the whole table. Only the
// operator can add that index (FerretDB does not know of it), so the
// doctor asks PostgreSQL, through the plan FerretDB passes through from
// explain, whether a find by _id on dsync's collections uses an index.

// idIndexCheck is the Check of the findings about the _id index.
const idIndexCheck = "_id index"

// idIndexMinDocs is the size from which a sequential scan means the index
// is missing: PostgreSQL reads a small table whole even when the index
// exists (measured with the harness: from 200 documents on, a find by _id
// used the index), so below this a plan says nothing.
const idIndexMinDocs = 1000

// idIndexFix is what to do when a find by _id reads the whole table.
const idIndexFix = "on FerretDB's PostgreSQL database, add a GIN index on (_jsonb->'_id') jsonb_path_ops to each of dsync's tables and set plan_cache_mode=force_custom_plan: the statements are in docs/deployments.md, \"FerretDB on PostgreSQL\""

// idPlan is what the doctor learnt of a find by _id on one collection.
type idPlan struct {
	collection string
	// docs is the collection's document count, counted up to
	// idIndexMinDocs.
	docs int64
	plan bson.Raw // explain's queryPlanner
	err  error    // why count or explain failed
}

// probeIDPlans counts the lock and sessions collections (up to
// idIndexMinDocs: FerretDB decodes every document it counts) and explains
// a find by _id on each.
func probeIDPlans(ctx context.Context, db *mongo.Database, collection string) []idPlan {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	primary := options.RunCmd().SetReadPreference(readpref.Primary())
	var out []idPlan
	for _, name := range []string{collection, collection + "_sessions"} {
		p := idPlan{collection: name}
		var count struct {
			N int64 `bson:"n"`
		}
		p.err = db.RunCommand(ctx, bson.D{{Key: "count", Value: name}, {Key: "limit", Value: int64(idIndexMinDocs)}}, primary).Decode(&count)
		p.docs = count.N
		if p.err == nil {
			var raw bson.Raw
			raw, p.err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{
				{Key: "find", Value: name},
				{Key: "filter", Value: bson.D{{Key: "_id", Value: "dsync doctor"}}},
			}}}, primary).Raw()
			if p.err == nil {
				p.plan, _ = raw.Lookup("queryPlanner").DocumentOK()
			}
		}
		out = append(out, p)
	}
	return out
}

// idIndexFindings says, for each collection probed, whether PostgreSQL
// serves a find by _id from an index.
func idIndexFindings(plans []idPlan) []dsyncmongo.Finding {
	var out []dsyncmongo.Finding
	add := func(status dsyncmongo.Status, found, fix string) {
		out = append(out, dsyncmongo.Finding{Check: idIndexCheck, Status: status, Found: found, Fix: fix})
	}
	for _, p := range plans {
		if p.err != nil {
			add(dsyncmongo.Warn,
				"could not tell whether a find by _id on "+p.collection+" uses an index (count or explain refused: "+oneLine(p.err)+"): without one, each Lock's reads scan the table",
				"grant count and explain on dsync's collections and run the doctor again, or check with EXPLAIN in psql; "+idIndexFix)
			continue
		}
		scan, index := planScans(p.plan)
		switch {
		case index != "":
			add(dsyncmongo.Pass,
				"PostgreSQL serves a find by _id on "+p.collection+" from an index ("+index+"): a Lock's reads cost the same whatever the collection holds",
				"")
		case p.docs < idIndexMinDocs:
			add(dsyncmongo.Pass,
				fmt.Sprintf("%s holds %d documents: too small to tell whether a find by _id uses an index (PostgreSQL reads a small table whole either way); the doctor can tell from %d documents on", p.collection, p.docs, idIndexMinDocs),
				"if the index of docs/deployments.md, \"FerretDB on PostgreSQL\", is not there yet, add it now: without it, each Lock's reads scan the table once it grows")
		case scan:
			add(dsyncmongo.Warn,
				fmt.Sprintf("PostgreSQL reads the whole table of %s (%d documents or more) for a find by _id (a sequential scan: FerretDB's own _id index cannot serve its query): each Lock's reads scan the table, so their cost grows with the keys stored", p.collection, idIndexMinDocs),
				idIndexFix)
		default:
			add(dsyncmongo.Warn,
				fmt.Sprintf("the plan of a find by _id on %s (%d documents or more) names neither an index nor a sequential scan: without an index, each Lock's reads scan the table", p.collection, idIndexMinDocs),
				"check with EXPLAIN in psql; "+idIndexFix)
		}
	}
	return out
}

// planScans walks a PostgreSQL JSON plan, as FerretDB passes it through
// (queryPlanner.Plan, with its children under Plans): whether a node
// reads a table whole, and the name of the first index a node reads.
func planScans(queryPlanner bson.Raw) (seqScan bool, index string) {
	var walk func(node bson.Raw)
	walk = func(node bson.Raw) {
		if t, _ := node.Lookup("Node Type").StringValueOK(); strings.Contains(t, "Seq Scan") {
			seqScan = true
		}
		if name, ok := node.Lookup("Index Name").StringValueOK(); ok && index == "" {
			index = name
		}
		children, _ := node.Lookup("Plans").ArrayOK()
		vals, _ := children.Values()
		for _, v := range vals {
			if child, ok := v.DocumentOK(); ok {
				walk(bson.Raw(child))
			}
		}
	}
	if root, ok := queryPlanner.Lookup("Plan").DocumentOK(); ok {
		walk(bson.Raw(root))
	}
	return seqScan, index
}
