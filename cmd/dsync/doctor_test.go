//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
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

// doctor --json against a server that cannot be reached still prints a
// JSON array: the server check, failed, with the reason.
func TestDoctorJSONWhenUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "mongodb://" + l.Addr().String() + "/?connectTimeoutMS=2000"
	l.Close() // nothing listens there now
	r := runDsync(t, env(""), "", slow(60*time.Second), "--uri", uri, "--timeout", "3s", "doctor", "--json")
	var findings []struct{ Check, Status, Found, Fix string }
	if err := json.Unmarshal([]byte(r.stdout), &findings); err != nil || r.code != exitFailure {
		t.Fatalf("doctor --json, nothing listening: exit %d, stdout %q (%v); want %d and a JSON array\nstderr: %s", r.code, r.stdout, err, exitFailure, r.stderr)
	}
	if len(findings) != 1 || findings[0].Check != "server" || findings[0].Status != "fail" || !strings.Contains(findings[0].Found, "cannot reach") || findings[0].Fix == "" {
		t.Errorf("doctor --json, nothing listening: %+v; want the server check failed, with the reason and a fix", findings)
	}
}

// Every check that doctor's help lists is printed, unless the help says
// when it applies: a standalone server (the test server, unless
// MONGODB_URI names a replica set) prints no member skew.
func TestDoctorHelpSaysWhenAChecksApplies(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	out := runDsync(t, e, "", slow(60*time.Second), "--db", mongotest.DatabaseName(t), "doctor")
	if out.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	// The checks are the lines of the help's list: a name, two blanks or
	// more, what it checks, and lines indented further that go on.
	checks := map[string]string{}
	list, _, _ := strings.Cut(doctorUsage[strings.Index(doctorUsage, "with what to do:\n\n")+len("with what to do:\n\n"):], "\n\n")
	last := ""
	for _, l := range strings.Split(list, "\n") {
		if name, what, ok := strings.Cut(strings.TrimPrefix(l, "  "), "  "); ok && name != "" && !strings.HasPrefix(l, "   ") {
			last = name
			checks[last] = what
		} else {
			checks[last] += " " + strings.TrimSpace(l)
		}
	}
	if len(checks) < 9 {
		t.Fatalf("the help lists %d checks: %q", len(checks), checks)
	}
	for name, what := range checks {
		if !strings.Contains(out.stdout, "  "+name+" ") && !strings.Contains(what, " only ") {
			t.Errorf("the help lists %q (%s) without saying when it applies, and doctor did not print it:\n%s", name, what, out.stdout)
		}
	}
}

// doctor names the version of the embedded server as dsync version does,
// not "unknown".
func TestDoctorNamesTheEmbeddedServersVersion(t *testing.T) {
	t.Parallel()
	e := append(env(""), "XDG_STATE_HOME="+t.TempDir())
	v := runDsync(t, e, "", slow(30*time.Second), "version")
	_, ferret, ok := strings.Cut(v.stdout, "embedded FerretDB ")
	ferret, _, _ = strings.Cut(ferret, ")")
	if !ok || !strings.HasPrefix(ferret, "v") {
		t.Fatalf("dsync version: %q; want the embedded FerretDB's version", v.stdout)
	}
	srv := startServer(t, e, "--temp")
	out := runDsync(t, e, "", slow(60*time.Second), "--uri", srv.uri, "doctor")
	if server := fields(t, out.stdout, "WARN  server"); len(server) < 4 || server[2] != "FerretDB" || server[3] != ferret+"," {
		t.Errorf("doctor against dsync server:\n%s\nwant the server named FerretDB %s", out.stdout, ferret)
	}
}
