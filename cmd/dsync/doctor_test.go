//go:build unix

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/mongotest"
)

// dsync doctor on the test server: every check, none failed; --json says
// the same; an index that refuses dsync's documents fails the run.
func TestDoctor(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	e := env(uri)
	db := mongotest.DatabaseName(t)
	out := runDsync(t, e, "", slow(60*time.Second), "--db", db, "doctor")
	if out.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	for _, check := range []string{"server", "write concern", "wake-ups", "lock index", "sharding", "privileges", "clock", "failover"} {
		if !strings.Contains(out.stdout, "  "+check+" ") {
			t.Errorf("no %q line in:\n%s", check, out.stdout)
		}
	}
	if strings.Contains(out.stdout, "FAIL") {
		t.Errorf("a check failed:\n%s", out.stdout)
	}

	js := runDsync(t, e, "", slow(60*time.Second), "--db", db, "doctor", "--json", "--ttl", "30s")
	var findings []struct{ Check, Status, Found, Fix string }
	if err := json.Unmarshal([]byte(js.stdout), &findings); err != nil || js.code != exitOK {
		t.Fatalf("--json: exit %d, %v\n%s", js.code, err, js.stdout)
	}
	if len(findings) < 8 || findings[0].Check != "server" || findings[0].Status == "" {
		t.Fatalf("--json findings: %+v", findings)
	}

	// A unique index on the lock index's keys refuses end markers.
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = client.Database(db).Collection("dsync_locks").Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "key", Value: 1}, {Key: "kind", Value: 1}, {Key: "epoch", Value: 1}},
		Options: options.Index().SetUnique(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := runDsync(t, e, "", slow(60*time.Second), "--db", db, "doctor")
	if bad.code != exitFailure || !strings.Contains(bad.stdout, "FAIL  lock index") || !strings.Contains(bad.stdout, "fix: ") {
		t.Fatalf("with a blocking index: exit %d\n%s", bad.code, bad.stdout)
	}
	for _, args := range [][]string{{"doctor", "x"}, {"doctor", "--ttl", "0s"}, {"doctor", "--ttl", "10s", "--renew", "10s"}} {
		if o := runDsync(t, e, "", slow(30*time.Second), append([]string{"--db", db}, args...)...); o.code != exitUsage {
			t.Errorf("dsync %v: exit %d, want %d\nstderr: %s", args, o.code, exitUsage, o.stderr)
		}
	}
}
