package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// The database a command uses: --db's, else the connection string's,
// else dsync.
func TestDatabaseChoice(t *testing.T) {
	for _, c := range []struct {
		uri   string
		db    string // "" for no --db
		want  string
		dbSet bool
	}{
		{uri: "mongodb://h:1/", want: defaultDB},
		{uri: "mongodb://h:1", want: defaultDB},
		{uri: "mongodb://h:1/app", want: "app"},
		{uri: "mongodb://u:p@h:1,h:2/app?replicaSet=rs&authSource=admin", want: "app"},
		{uri: "mongodb://h:1/?replicaSet=rs", want: defaultDB},
		{uri: "mongodb://h:1/app", db: "other", dbSet: true, want: "other"},
		{uri: "not a uri", want: defaultDB},
	} {
		g := &globals{db: defaultDB}
		if c.dbSet {
			if err := (dbFlag{g}).Set(c.db); err != nil {
				t.Fatal(err)
			}
		}
		if got := g.database(c.uri); got != c.want {
			t.Errorf("database(%q) with --db %q = %q, want %q", c.uri, c.db, got, c.want)
		}
	}
}

// A connection string that names a database is obeyed: the lock lives
// there, and status finds it there without --db; --db still wins.
func TestDatabaseOfTheConnectionString(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	base, opts, _ := strings.Cut(uri, "?")
	withDB := strings.TrimSuffix(base, "/") + "/" + db
	if opts != "" {
		withDB += "?" + opts
	}
	e := env(withDB)
	script := untilListed(`"$0"`, "nightly") + `; "$0" -v status`
	r := runDsync(t, e, "", slow(2*time.Minute), "lock", "nightly", "--", "sh", "-c", script, dsyncBin)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "nightly") || !strings.Contains(r.stdout, "held") {
		t.Errorf("status under the lock, both on %s:\n%s", withDB, r.stdout)
	}
	if want := `database "` + db + `", lock collection "dsync_locks"`; !strings.Contains(r.stderr, want) {
		t.Errorf("status -v said %q, want it to name %s", r.stderr, want)
	}
	client := mongotest.NewClient(t, uri)
	n, err := client.Database(db).Collection("dsync_locks").CountDocuments(context.Background(), bson.D{{Key: "key", Value: "nightly"}})
	if err != nil || n == 0 {
		t.Errorf("documents of the lock in %s.dsync_locks: %d (%v), want some", db, n, err)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db+"-other", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "no locks") {
		t.Errorf("status with --db naming another database: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
