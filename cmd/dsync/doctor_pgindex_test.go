//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// PostgreSQL's plans of a find by _id as FerretDB 1.24 passes them through
// explain (queryPlanner), trimmed from the harness's answers: a table
// read whole, and the GIN index of docs/deployments.md read first.
var (
	seqScanPlan = bson.D{{Key: "Plan", Value: bson.D{
		{Key: "Node Type", Value: "Seq Scan"},
		{Key: "Relation Name", Value: "dsync_locks_1e2ac547"},
		{Key: "Filter", Value: `((dsync_locks_1e2ac547._jsonb -> '_id'::text) @> '"dsync doctor"'::jsonb)`},
	}}}
	indexPlan = bson.D{{Key: "Plan", Value: bson.D{
		{Key: "Node Type", Value: "Bitmap Heap Scan"},
		{Key: "Relation Name", Value: "dsync_locks_1e2ac547"},
		{Key: "Plans", Value: bson.A{bson.D{
			{Key: "Node Type", Value: "Bitmap Index Scan"},
			{Key: "Parent Relationship", Value: "Outer"},
			{Key: "Index Name", Value: "dsync_id_3a3dcc4b1c28267e4d66"},
		}}},
	}}}
)

// On FerretDB 1 on PostgreSQL, the product's findings say, for each of
// dsync's collections, whether a find by _id is served from an index: a
// sequential scan of a collection large enough that PostgreSQL would use
// the index warns, with the consequence and the fix; an index passes; a
// small collection passes with a note that it is too small to tell.
func TestDoctorIDIndexFindings(t *testing.T) {
	pg := lookAlikes[len(lookAlikes)-1]
	if pg.name != "FerretDB 1 on PostgreSQL" {
		t.Fatalf("the last look-alike is %q", pg.name)
	}
	cases := []struct {
		name   string
		plan   idPlan
		status dsyncmongo.Status
		want   []string
	}{
		{"seq scan, large", idPlan{collection: "dsync_locks", docs: idIndexMinDocs, plan: mustRaw(t, seqScanPlan)}, dsyncmongo.Warn,
			[]string{"reads the whole table of dsync_locks", "cost grows with the keys stored"}},
		{"index", idPlan{collection: "dsync_locks", docs: idIndexMinDocs, plan: mustRaw(t, indexPlan)}, dsyncmongo.Pass,
			[]string{"from an index (dsync_id_3a3dcc4b1c28267e4d66)"}},
		{"index, small", idPlan{collection: "dsync_locks_sessions", docs: 3, plan: mustRaw(t, indexPlan)}, dsyncmongo.Pass,
			[]string{"from an index"}},
		{"seq scan, small", idPlan{collection: "dsync_locks_sessions", docs: 3, plan: mustRaw(t, seqScanPlan)}, dsyncmongo.Pass,
			[]string{"dsync_locks_sessions holds 3 documents: too small to tell"}},
		{"refused", idPlan{collection: "dsync_locks", err: errors.New("not authorized")}, dsyncmongo.Warn,
			[]string{"could not tell", "not authorized"}},
	}
	for _, c := range cases {
		a := pg.answers(t)
		a.idPlans = []idPlan{c.plan}
		var got []dsyncmongo.Finding
		for _, f := range productFindings(a) {
			if f.Check == idIndexCheck {
				got = append(got, f)
			}
		}
		if len(got) != 1 {
			t.Errorf("%s: %d %s findings, want 1: %+v", c.name, len(got), idIndexCheck, productFindings(a))
			continue
		}
		f := got[0]
		if f.Status != c.status {
			t.Errorf("%s: status %v, want %v: %+v", c.name, f.Status, c.status, f)
		}
		for _, w := range c.want {
			if !strings.Contains(f.Found, w) {
				t.Errorf("%s: %q does not say %q", c.name, f.Found, w)
			}
		}
		if f.Status == dsyncmongo.Warn && !strings.Contains(f.Fix, `docs/deployments.md, "FerretDB on PostgreSQL"`) {
			t.Errorf("%s: the fix does not name the docs' section: %q", c.name, f.Fix)
		}
	}
	// Other products are not asked.
	for _, l := range lookAlikes[:len(lookAlikes)-1] {
		a := l.answers(t)
		a.idPlans = []idPlan{cases[0].plan}
		for _, f := range productFindings(a) {
			if f.Check == idIndexCheck {
				t.Errorf("%s: %+v", l.name, f)
			}
		}
	}
}

// dsync doctor --json against a fake FerretDB 1 on PostgreSQL: it counts
// and explains a find by _id on the lock and the sessions collections,
// and says what the plans show.
func TestDoctorJSONIDIndex(t *testing.T) {
	t.Parallel()
	pg := lookAlikes[len(lookAlikes)-1]
	for _, c := range []struct {
		name   string
		plan   bson.D
		count  int32
		status string
		want   string
	}{
		{"seq_scan", seqScanPlan, 5000, "warn", "reads the whole table of "},
		{"index", indexPlan, 5000, "pass", "from an index (dsync_id_"},
		{"small", seqScanPlan, 10, "pass", "too small to tell"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := pg
			l.plan, l.count = c.plan, c.count
			out := runDsync(t, env("mongodb://"+fakeServer(t, l)+"/?directConnection=true"), "", slow(90*time.Second),
				"--db", "lookalike", "--timeout", "30s", "doctor", "--json")
			var findings []struct{ Check, Status, Found, Fix string }
			if err := json.Unmarshal([]byte(out.stdout), &findings); err != nil {
				t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", out.code, err, out.stdout, out.stderr)
			}
			var seen []string
			for _, f := range findings {
				if f.Check == idIndexCheck && f.Status == c.status && strings.Contains(f.Found, c.want) {
					seen = append(seen, f.Found)
				}
			}
			if len(seen) != 2 || !strings.Contains(seen[0], "dsync_locks ") || !strings.Contains(seen[1], "dsync_locks_sessions ") {
				t.Errorf("want a %s %q finding for dsync_locks and dsync_locks_sessions, got:\n%s", c.status, c.want, out.stdout)
			}
		})
	}
}

// On the harness's FerretDB over PostgreSQL (DSYNC_MONGOTEST_BACKEND=
// postgresql), which adds the GIN index of docs/deployments.md to every
// table: with a lock collection of idIndexMinDocs documents, the doctor
// sees PostgreSQL read a find by _id from that index, and says the
// sessions collection, which it leaves near empty, is too small to tell.
func TestDoctorIDIndexOnPostgreSQL(t *testing.T) {
	t.Parallel()
	srv := mongotest.Shared(t)
	if srv.Backend() != mongotest.BackendPostgreSQL {
		t.Skip("the test server is not FerretDB on PostgreSQL (DSYNC_MONGOTEST_BACKEND=postgresql)")
	}
	db := mongotest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()
	locks := db.Collection("dsync_locks")
	var docs []any
	for i := range idIndexMinDocs {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("doctor-test/%06d", i)}, {Key: "key", Value: fmt.Sprintf("k%d", i/5)}, {Key: "kind", Value: "claim"}, {Key: "epoch", Value: int64(i)}})
	}
	if _, err := locks.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// The server indexes a new table within a pass or two of its poll.
	for {
		p := probeIDPlans(ctx, db, "dsync_locks")
		if _, index := planScans(p[0].plan); index != "" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the lock collection's table never got an index a find by _id uses: %+v", p[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := runDsync(t, env(srv.URI()), "", slow(90*time.Second), "--db", db.Name(), "doctor", "--json")
	var findings []struct{ Check, Status, Found, Fix string }
	if err := json.Unmarshal([]byte(out.stdout), &findings); err != nil {
		t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", out.code, err, out.stdout, out.stderr)
	}
	want := map[string]string{
		"PostgreSQL serves a find by _id on dsync_locks from an index (dsync_id_": "pass",
		"dsync_locks_sessions holds ": "pass",
	}
	for w, status := range want {
		found := false
		for _, f := range findings {
			found = found || f.Check == idIndexCheck && f.Status == status && strings.Contains(f.Found, w)
		}
		if !found {
			t.Errorf("no %s %s finding containing %q in:\n%s", status, idIndexCheck, w, out.stdout)
		}
	}
}
