package mongotest

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestRestartOnPostgreSQLKnowsEveryDatabase: FerretDB 1.24 on PostgreSQL
// loads its list of databases once, on the first command that needs it,
// and keeps what it loaded if one of the load's reads fails: the databases
// it had not loaded stay unknown to it, and every write to them fails
// (SQLSTATE 42P07) until it restarts. A restart under load met it (the
// integration fault suites on PostgreSQL did). Here one read of the load
// fails: a lock on one database's metadata table, with a lock_timeout on
// FerretDB's connections, while a client's command reaches the restarted
// server. Once the lock is gone, both databases must take writes and
// answer reads. It fails without ferretserve's check
// (internal/ferretserve/pgregistry.go).
func TestRestartOnPostgreSQLKnowsEveryDatabase(t *testing.T) {
	p := StartProcess(t)
	if p.pg == "" {
		t.Skipf("FerretDB on PostgreSQL only (%s=%s)", envBackend, BackendPostgreSQL)
	}
	c := NewClient(t, p.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dbs := []string{"registry_a", "registry_b"}
	for _, db := range dbs {
		if _, err := c.Database(db).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "before"}}); err != nil {
			t.Fatalf("insert into %s: %v", db, err)
		}
	}
	if err := c.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	p.Stop()

	pg, err := sharedPostgres()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(p.pg)
	if err != nil {
		t.Fatal(err)
	}
	pgDB := strings.TrimPrefix(u.Path, "/")
	if err := pg.Exec("postgres", "ALTER DATABASE "+pgDB+" SET lock_timeout = '100ms'"); err != nil {
		t.Fatal(err)
	}
	release, err := pg.Hold(pgDB,
		`BEGIN; LOCK TABLE registry_b._ferretdb_database_metadata IN ACCESS EXCLUSIVE MODE;`)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()

	started := make(chan error, 1)
	go func() {
		ch, err := startChild(p.dir, p.addr, p.pg, p.log)
		if err == nil {
			p.mu.Lock()
			p.c = ch
			p.mu.Unlock()
		}
		started <- err
	}()
	// Without the check, the command below starts the load, which fails,
	// and is answered with an error. With it, the check sees the load fail
	// and starts FerretDB again, until the lock is gone. The lock goes once
	// the command is answered, or after a while should it not be.
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		firstFind(ctx, p.URI())
	}()
	held := time.Now()
	select {
	case <-answered:
		t.Logf("the first command was answered %v after the lock was taken", time.Since(held).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Logf("the first command was not answered in 10 s; the lock goes")
	}
	release()
	released = true
	if err := pg.Exec("postgres", "ALTER DATABASE "+pgDB+" RESET lock_timeout"); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("restart: %v", err)
	}

	c = NewClient(t, p.URI())
	for _, db := range dbs {
		coll := c.Database(db).Collection("c")
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
			t.Errorf("insert into %s after the restart: %v", db, err)
		}
		n, err := coll.CountDocuments(ctx, bson.D{})
		if err != nil || n != 2 {
			t.Errorf("%s after the restart: %d documents (%v), want 2", db, n, err)
		}
	}
}

// firstFind sends a findAndModify to the server at uri until one is
// answered by the server (a result or its error), or ctx ends: on a server
// no one has yet asked, it loads the list of databases.
func firstFind(ctx context.Context, uri string) {
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(time.Second))
	if err != nil {
		return
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	find := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: "none"}}},
		{Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}}
	for ctx.Err() == nil {
		err := c.Database("registry_a").RunCommand(ctx, find).Err()
		var se mongo.ServerError
		if err == nil || errors.As(err, &se) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
