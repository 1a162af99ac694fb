package mongotest_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestMain(m *testing.M) { mongotest.MainWithLeakCheck(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestSharedPingHello(t *testing.T) {
	srv := mongotest.Shared(t)
	if srv.URI() == "" {
		t.Fatal("empty URI")
	}
	switch srv.Kind() {
	case "uri", "docker", "ferretdb":
	default:
		t.Fatalf("Kind() = %q", srv.Kind())
	}
	if srv2 := mongotest.Shared(t); srv2 != srv {
		t.Fatal("Shared returned a different server on second call")
	}
	c := mongotest.NewClient(t, srv.URI())
	if err := c.Ping(ctx(t), nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	hello, err := mongotest.Hello(ctx(t), c)
	if err != nil {
		t.Fatalf("hello: %v", err)
	}
	if hello["isWritablePrimary"] != true {
		t.Fatalf("hello.isWritablePrimary = %v; hello = %v", hello["isWritablePrimary"], hello)
	}
	if _, ok := hello["localTime"].(bson.DateTime); !ok {
		t.Fatalf("hello.localTime missing: %v", hello)
	}
	t.Logf("kind %s, uri %s, hello %v", srv.Kind(), srv.URI(), hello)
}

func TestInsertVisibleToSecondClient(t *testing.T) {
	db1 := mongotest.NewDatabase(t)
	db2 := mongotest.SameDatabase(t, db1)
	if db1.Client() == db2.Client() {
		t.Fatal("SameDatabase reused the client")
	}
	if db1.Name() != db2.Name() {
		t.Fatalf("names differ: %s vs %s", db1.Name(), db2.Name())
	}
	if _, err := db1.Collection("c").InsertOne(ctx(t), bson.D{{Key: "_id", Value: "a"}, {Key: "v", Value: 1}}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var got struct {
		V int `bson:"v"`
	}
	if err := db2.Collection("c").FindOne(ctx(t), bson.D{{Key: "_id", Value: "a"}}).Decode(&got); err != nil {
		t.Fatalf("find through second client: %v", err)
	}
	if got.V != 1 {
		t.Fatalf("v = %d", got.V)
	}
}

func TestNewDatabaseUniqueAndDropped(t *testing.T) {
	var name string
	var uri string
	t.Run("inner", func(t *testing.T) {
		a := mongotest.NewDatabase(t)
		b := mongotest.NewDatabase(t)
		if a.Name() == b.Name() {
			t.Fatalf("same name twice: %s", a.Name())
		}
		if _, err := a.Collection("c").InsertOne(ctx(t), bson.D{{Key: "x", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		name, uri = a.Name(), mongotest.Shared(t).URI()
	})
	c := mongotest.NewClient(t, uri)
	names, err := c.ListDatabaseNames(ctx(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == name {
			t.Fatalf("database %s not dropped at cleanup", name)
		}
	}
}

func TestClientOptionsPassedThrough(t *testing.T) {
	var mu sync.Mutex
	var cmds []string
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		cmds = append(cmds, e.CommandName)
		mu.Unlock()
	}}
	db := mongotest.NewDatabase(t, options.Client().SetMonitor(mon))
	if _, err := db.Collection("c").InsertOne(ctx(t), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !contains(cmds, "insert") {
		t.Fatalf("monitor saw %v, want an insert", cmds)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestUniqueIndexDuplicateKey(t *testing.T) {
	coll := mongotest.NewDatabase(t).Collection("locks")
	_, err := coll.Indexes().CreateOne(ctx(t), mongo.IndexModel{
		Keys:    bson.D{{Key: "name", Value: 1}},
		Options: options.Index().SetUnique(true),
	})
	if err != nil {
		t.Fatalf("create index: %v", err)
	}
	if _, err := coll.InsertOne(ctx(t), bson.D{{Key: "name", Value: "l1"}}); err != nil {
		t.Fatalf("first insert: %v", err)
	}
	_, err = coll.InsertOne(ctx(t), bson.D{{Key: "name", Value: "l1"}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert: got %v, want a duplicate key error", err)
	}
	// Same through an upsert racing on the unique key.
	_, err = coll.UpdateOne(ctx(t), bson.D{{Key: "name", Value: "l2"}, {Key: "owner", Value: "a"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "owner", Value: "a"}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil {
		t.Fatalf("upsert: %v", err)
	}
	_, err = coll.UpdateOne(ctx(t), bson.D{{Key: "name", Value: "l2"}, {Key: "owner", Value: "b"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "owner", Value: "b"}}}}, options.UpdateOne().SetUpsert(true))
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("conflicting upsert: got %v, want a duplicate key error", err)
	}
}

func TestWriteConcernMajorityAndRetryableWrites(t *testing.T) {
	db := mongotest.NewDatabase(t,
		options.Client().SetWriteConcern(writeconcern.Majority()).SetRetryWrites(true))
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctx(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert w:majority: %v", err)
	}
	res, err := coll.UpdateOne(ctx(t), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if err != nil || res.ModifiedCount != 1 {
		t.Fatalf("update w:majority: %v %+v", err, res)
	}
	var doc bson.M
	err = coll.FindOneAndUpdate(ctx(t), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc)
	if err != nil {
		t.Fatalf("findAndModify w:majority: %v", err)
	}
	if fmt.Sprint(doc["n"]) != "2" {
		t.Fatalf("n = %v", doc["n"])
	}
}

func TestDatabaseName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9_]{1,63}$`)
	seen := map[string]bool{}
	for _, sub := range []string{"plain", "With Spaces/and.dots$", strings.Repeat("long-name-", 20), "ÜñïçØdé"} {
		t.Run(sub, func(t *testing.T) {
			n := mongotest.DatabaseName(t)
			if !valid.MatchString(n) {
				t.Fatalf("invalid name %q", n)
			}
			if seen[n] {
				t.Fatalf("duplicate name %q", n)
			}
			seen[n] = true
		})
	}
}

func TestProcessKillRestart(t *testing.T) {
	p := mongotest.StartProcess(t)
	uri, pid := p.URI(), p.Pid()
	if pid == 0 || !p.Running() {
		t.Fatalf("not running: pid %d", pid)
	}
	// Short timeouts so operations against the dead server fail fast.
	c := mongotest.NewClient(t, uri, options.Client().SetServerSelectionTimeout(2*time.Second))
	coll := c.Database("faults").Collection("c")
	if _, err := coll.InsertOne(ctx(t), bson.D{{Key: "_id", Value: "k"}, {Key: "v", Value: 42}}); err != nil {
		t.Fatalf("insert: %v", err)
	}

	p.Kill()
	if p.Running() || p.Pid() != 0 {
		t.Fatal("still running after Kill")
	}
	if err := c.Ping(ctx(t), nil); err == nil {
		t.Fatal("ping succeeded against a killed server")
	}

	p.Restart()
	if p.URI() != uri {
		t.Fatalf("URI changed: %s -> %s", uri, p.URI())
	}
	if p.Pid() == pid || p.Pid() == 0 {
		t.Fatalf("pid after restart %d (was %d)", p.Pid(), pid)
	}
	// The old client reconnects by itself to the same address.
	var got struct {
		V int `bson:"v"`
	}
	if err := coll.FindOne(ctx(t), bson.D{{Key: "_id", Value: "k"}}).Decode(&got); err != nil {
		t.Fatalf("find after restart: %v", err)
	}
	if got.V != 42 {
		t.Fatalf("v = %d after restart", got.V)
	}

	// Graceful stop + restart keeps data too.
	p.Stop()
	p.Restart()
	n, err := coll.CountDocuments(ctx(t), bson.D{})
	if err != nil || n != 1 {
		t.Fatalf("count after stop/restart: %d, %v", n, err)
	}
}

// While the shared server and a Process run, the test process holds no
// goroutines for them (they are child processes; stderr goes to files).
func TestNoHarnessGoroutinesWhileServing(t *testing.T) {
	mongotest.Shared(t)
	p := mongotest.StartProcess(t)
	if err := goleak.Find(); err != nil {
		t.Fatalf("goroutines while serving: %v", err)
	}
	p.Kill()
	p.Restart()
	if err := goleak.Find(); err != nil {
		t.Fatalf("goroutines after restart: %v", err)
	}
}
