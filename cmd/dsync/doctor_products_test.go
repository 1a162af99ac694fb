//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// lookAlike is what one product answers to the commands the recognition
// reads, faked from the products' documentation: hello names the
// service's endpoints, buildInfo the version (and FerretDB's own
// fields), a capped create is refused where the product has none, and a
// FerretDB 1 passes its backend's query plan through explain.
type lookAlike struct {
	name      string
	hello     bson.D // added to a primary's hello
	buildInfo bson.D
	capped    bson.D // the answer to a capped create
	plan      bson.D // explain's queryPlanner
	count     int32  // the answer to count (refused when 0)
	uriQuery  string // the connection string's options
	want      []string
}

var cappedRefused = bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "Capped collections are not supported"}, {Key: "code", Value: int32(115)}, {Key: "codeName", Value: "CommandNotSupported"}}

var lookAlikes = []lookAlike{
	{
		name: "Amazon DocumentDB",
		hello: bson.D{
			{Key: "setName", Value: "rs0"},
			{Key: "hosts", Value: bson.A{"docdb-1.abcdefgh.eu-west-1.docdb.amazonaws.com:27017", "docdb-2.abcdefgh.eu-west-1.docdb.amazonaws.com:27017"}},
			{Key: "me", Value: "docdb-1.abcdefgh.eu-west-1.docdb.amazonaws.com:27017"},
		},
		buildInfo: bson.D{{Key: "version", Value: "5.0.0"}},
		capped:    cappedRefused,
		uriQuery:  "&readPreference=secondaryPreferred&retryWrites=false",
		want: []string{
			"Amazon DocumentDB has no capped collections",
			"reads from secondaryPreferred, as Amazon DocumentDB's sample connection strings do",
			"retryable writes are off (retryWrites=false, as Amazon DocumentDB's sample connection strings do)",
		},
	},
	{
		name: "Azure Cosmos DB for MongoDB",
		hello: bson.D{
			{Key: "setName", Value: "globaldb"},
			{Key: "hosts", Value: bson.A{"myaccount.mongo.cosmos.azure.com:10255"}},
		},
		buildInfo: bson.D{{Key: "version", Value: "4.2.0"}},
		capped:    cappedRefused,
		want: []string{
			"Azure Cosmos DB for MongoDB has no capped collections",
			"TTL indexes only on _ts",
			"maps every write concern to the account's default consistency level",
		},
	},
	{
		name:      "FerretDB 2",
		buildInfo: bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.5.0"}}}},
		capped:    bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "capped collections are not supported"}, {Key: "code", Value: int32(238)}, {Key: "codeName", Value: "NotImplemented"}},
		want:      []string{"FerretDB v2.5.0 has no capped collections"},
	},
	{
		// The ferretdb document alone names FerretDB 2, as it does to the
		// store, whatever version it carries.
		name:      "FerretDB 2 without a version",
		buildInfo: bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{}}},
		capped:    bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "capped collections are not supported"}, {Key: "code", Value: int32(238)}, {Key: "codeName", Value: "NotImplemented"}},
		want:      []string{"FerretDB (version not reported) has no capped collections"},
	},
	{
		name:      "FerretDB 1 on SQLite",
		buildInfo: bson.D{{Key: "version", Value: "7.0.42"}, {Key: "ferretdbVersion", Value: "v1.24.0"}},
		capped:    bson.D{{Key: "ok", Value: 1.0}},
		plan:      bson.D{{Key: "Plan", Value: bson.A{"id=2 parent=0 notused=0 detail=SCAN t_doctor_events_1f2e3d4c"}}},
		want:      []string{"FerretDB v1.24.0 on SQLite"},
	},
	{
		name:      "FerretDB 1 on PostgreSQL",
		buildInfo: bson.D{{Key: "version", Value: "7.0.42"}, {Key: "ferretdbVersion", Value: "v1.24.0"}},
		capped:    bson.D{{Key: "ok", Value: 1.0}},
		plan:      bson.D{{Key: "Plan", Value: bson.D{{Key: "Node Type", Value: "Seq Scan"}, {Key: "Relation Name", Value: "t_doctor_events_1f2e3d4c"}}}},
		want:      []string{"FerretDB v1.24.0 on PostgreSQL"},
	},
}

// answers turns a product's faked answers into what probeProduct gathers.
func (l lookAlike) answers(t *testing.T) productAnswers {
	t.Helper()
	raw := func(d bson.D) bson.Raw {
		if d == nil {
			return nil
		}
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := productAnswers{hello: raw(append(bson.D{{Key: "isWritablePrimary", Value: true}}, l.hello...)), buildInfo: raw(l.buildInfo), plan: raw(l.plan)}
	capped := raw(l.capped)
	if ok, _ := capped.Lookup("ok").DoubleOK(); ok != 1 {
		msg, _ := capped.Lookup("errmsg").StringValueOK()
		a.cappedErr = mongo.CommandError{Code: 115, Message: msg}
	}
	if strings.Contains(l.uriQuery, "secondaryPreferred") {
		a.readPref = "secondaryPreferred"
	}
	if strings.Contains(l.uriQuery, "retryWrites=false") {
		off := false
		a.retryWrites = &off
	}
	return a
}

// Each look-alike's answers give its quirks, each one finding with what it
// means for dsync and the fix; MongoDB's give none.
func TestProductFindings(t *testing.T) {
	for _, l := range lookAlikes {
		findings := productFindings(l.answers(t))
		for _, want := range l.want {
			if !hasFinding(findings, want) {
				t.Errorf("%s: no finding containing %q in %+v", l.name, want, findings)
			}
		}
		if len(findings) != len(l.want) {
			t.Errorf("%s: %d findings, want %d: %+v", l.name, len(findings), len(l.want), findings)
		}
		for _, f := range findings {
			if f.Check != productCheck || f.Fix == "" || !strings.Contains(f.Found, ": ") {
				t.Errorf("%s: finding without its consequence or fix: %+v", l.name, f)
			}
		}
	}
	mongodb := productAnswers{
		hello:     mustRaw(t, bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "setName", Value: "rs0"}, {Key: "hosts", Value: bson.A{"db1.example.com:27017"}}}),
		buildInfo: mustRaw(t, bson.D{{Key: "version", Value: "8.0.4"}}),
		plan:      mustRaw(t, bson.D{{Key: "winningPlan", Value: bson.D{{Key: "stage", Value: "EXPRESS_IXSCAN"}}}}),
	}
	if p, _ := recognise(mongodb); p != productMongoDB {
		t.Errorf("MongoDB recognised as %d", p)
	}
	if f := productFindings(mongodb); len(f) != 0 {
		t.Errorf("MongoDB: %+v", f)
	}
	// A capped create refused for want of a privilege says nothing of
	// the product.
	docdb := lookAlikes[0].answers(t)
	docdb.cappedErr = mongo.CommandError{Code: unauthorized, Name: "Unauthorized", Message: "not authorized on db to execute command { create: ... }"}
	if hasFinding(productFindings(docdb), "no capped collections") {
		t.Errorf("an unauthorized create taken for no capped collections: %+v", productFindings(docdb))
	}
	// A refused capped create alone does not make a product: the wake-ups
	// check reports it.
	mongodb.cappedErr = errors.New("not authorized")
	if f := productFindings(mongodb); len(f) != 0 {
		t.Errorf("MongoDB without createCollection: %+v", f)
	}
}

func hasFinding(findings []dsyncmongo.Finding, s string) bool {
	for _, f := range findings {
		if strings.Contains(f.Found, s) {
			return true
		}
	}
	return false
}

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dsync doctor --json against a fake server that answers as each
// look-alike does: its findings name the product's quirks. The fake
// refuses every other command, so the other checks fail; only the
// product's findings are looked at.
func TestDoctorJSONLookAlikes(t *testing.T) {
	t.Parallel()
	for _, l := range lookAlikes {
		t.Run(strings.ReplaceAll(l.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			addr := fakeServer(t, l)
			uri := "mongodb://" + addr + "/?directConnection=true" + l.uriQuery
			out := runDsync(t, env(uri), "", slow(90*time.Second), "--db", "lookalike", "--timeout", "30s", "doctor", "--json")
			var findings []struct{ Check, Status, Found, Fix string }
			if err := json.Unmarshal([]byte(out.stdout), &findings); err != nil {
				t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", out.code, err, out.stdout, out.stderr)
			}
			for _, want := range l.want {
				found := false
				for _, f := range findings {
					if f.Check == productCheck && strings.Contains(f.Found, want) && f.Fix != "" {
						found = true
					}
				}
				if !found {
					t.Errorf("no product finding containing %q in:\n%s", want, out.stdout)
				}
			}
		})
	}
}

// The harness's server is recognised through what it really answers: the
// embedded FerretDB 1 by its buildInfo and its backend by its query plan;
// MongoDB gets no product finding.
func TestDoctorRecognisesTestServer(t *testing.T) {
	t.Parallel()
	srv := mongotest.Shared(t)
	out := runDsync(t, env(srv.URI()), "", slow(60*time.Second), "--db", mongotest.DatabaseName(t), "doctor", "--json")
	var findings []struct{ Check, Status, Found, Fix string }
	if err := json.Unmarshal([]byte(out.stdout), &findings); err != nil {
		t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", out.code, err, out.stdout, out.stderr)
	}
	var product []string
	for _, f := range findings {
		if f.Check == productCheck {
			product = append(product, f.Found)
		}
	}
	switch {
	case !srv.IsFerretDB():
		// (A MONGODB_URI's own readPreference or retryWrites may give
		// findings; no product may be named.)
		for _, f := range product {
			for _, name := range []string{"FerretDB", "DocumentDB", "Cosmos"} {
				if strings.Contains(f, name) {
					t.Errorf("%s server taken for %s: %q", srv.Kind(), name, f)
				}
			}
		}
	default:
		backend := "on SQLite"
		if os.Getenv("DSYNC_MONGOTEST_BACKEND") == "postgresql" {
			backend = "on PostgreSQL"
		}
		if len(product) != 1 || !strings.Contains(product[0], backend) {
			t.Errorf("embedded FerretDB: product findings %q, want one %q", product, backend)
		}
	}
}
