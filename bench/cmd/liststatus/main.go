// Command liststatus measures the first page of a listing of locks when
// the store knows many keys: the time to read the first 100 keys, with
// their queues, through statuspage.Reader.List, and the wall time of
// `dsync status --limit 100` (a fresh process: start, connect, the
// server's clock, the page), with -keys entries in the directory of keys.
// With -locked, it also times a fresh Client's first Lock+Unlock (a new
// connection and backend, as a process started by cron) of a key locked
// a moment before, whose documents are within the idle age, and of a key
// never used.
//
// Usage:
//
//	go build -o /tmp/dsync ./cmd/dsync
//	go run ./bench/cmd/liststatus [-keys 100000] [-locked 0] [-runs 5] [-dsync /tmp/dsync]
//	liststatus serve DIR   (run FerretDB for it; used internally)
//
// The server is MONGODB_URI if set; otherwise an embedded FerretDB in a
// child process. The directory is filled with inserts of its documents
// (as if -keys keys had each been locked once and their lock documents
// compacted away); -locked of them are also locked and unlocked through
// the library, leaving the lock documents that a key used once leaves
// today, so that their queues cost what they cost.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/bench/internal/ferret"
	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/statuspage"
)

const (
	dbName     = "liststatus"
	collection = dsyncmongo.DefaultCollection
	page       = 100
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		if err := ferret.Serve(context.Background(), os.Args[2], "127.0.0.1:0", os.Stdout, true); err != nil {
			fmt.Fprintln(os.Stderr, "liststatus serve:", err)
			os.Exit(1)
		}
		return
	}
	keys := flag.Int("keys", 100_000, "entries in the directory of keys")
	locked := flag.Int("locked", 0, "of them, how many to lock and unlock through the library first")
	runs := flag.Int("runs", 5, "measurements of each figure")
	dsyncBin := flag.String("dsync", "", "the dsync command to time 'dsync status --limit 100' with (skipped if empty)")
	flag.Parse()
	if err := run(*keys, *locked, *runs, *dsyncBin); err != nil {
		fmt.Fprintln(os.Stderr, "liststatus:", err)
		os.Exit(1)
	}
}

func run(keys, locked, runs int, dsyncBin string) error {
	ctx := context.Background()
	uri, server, stop, err := startServer()
	if err != nil {
		return err
	}
	defer stop()
	cmds := &counter{}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(cmds.monitor()))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	db := client.Database(dbName)
	if err := db.Drop(ctx); err != nil {
		return err
	}
	store, err := dsyncmongo.NewStore(db)
	if err != nil {
		return err
	}
	c, err := dsync.NewClient(store)
	if err != nil {
		return err
	}
	defer c.Close()
	b := &listBench{uri: uri, keys: keys, locked: locked, runs: runs, db: db, c: c, cmds: cmds}
	if err := b.fillDirectory(ctx, server); err != nil {
		return err
	}
	lib, perPage, err := b.listPages(ctx)
	if err != nil {
		return err
	}
	dir, err := b.directoryFinds(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("server: %s; directory: %d keys (%d locked once through the library, %d recorded only); order: %v\n\n",
		server, keys, min(locked, keys), keys-min(locked, keys), b.order)
	fmt.Printf("| what | median | min | max |\n|---|---|---|---|\n")
	row(fmt.Sprintf("the directory's find of the first %d keys, alone (%d runs)", page, runs), dir)
	row(fmt.Sprintf("Reader.List, first %d keys with their queues (%d runs)", page, runs), lib)
	if locked > 0 {
		if err := b.firstLocks(ctx); err != nil {
			return err
		}
	}
	if dsyncBin != "" {
		if err := b.statusCommands(dsyncBin); err != nil {
			return err
		}
	}
	fmt.Printf("\ncommands of one Reader.List page: %v\n", perPage)
	return nil
}

// startServer returns the server's URI and description: MONGODB_URI if
// set, else an embedded FerretDB that stop stops.
func startServer() (uri, server string, stop func(), err error) {
	uri = os.Getenv("MONGODB_URI")
	if uri != "" {
		return uri, "MongoDB at MONGODB_URI", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "liststatus-ferretdb-")
	if err != nil {
		return "", "", nil, err
	}
	srv, err := ferret.Start("serve", filepath.Join(dir, "data"))
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	return srv.URI, "embedded FerretDB 1.24 (SQLite)", func() {
		srv.Stop()
		os.RemoveAll(dir)
	}, nil
}

// A listBench is one run's directory of keys and the Client that lists it.
type listBench struct {
	uri                string
	keys, locked, runs int
	db                 *mongo.Database
	c                  *dsync.Client
	cmds               *counter // the commands c sends, by name
	names              []string // the keys, the ones locked first
	order              statuspage.KeyOrder
}

// fillDirectory makes the directory of keys: locked keys locked and
// unlocked through the library, the others inserted.
func (b *listBench) fillDirectory(ctx context.Context, server string) error {
	b.names = make([]string, b.keys)
	for i, n := range rand.Perm(b.keys) { // first used in no particular order
		b.names[i] = fmt.Sprintf("job/%06d", n)
	}
	start := time.Now()
	for i := 0; i < b.locked && i < b.keys; i++ {
		m, err := dsync.NewMutex(b.c, b.names[i])
		if err != nil {
			return err
		}
		if err := m.LockContext(ctx); err != nil {
			return err
		}
		m.Unlock()
	}
	if err := fill(ctx, b.db.Collection(collection+"_keys"), b.names[min(b.locked, b.keys):]); err != nil {
		return err
	}
	var err error
	if b.order, err = statuspage.NewReader(b.c).ListOrder(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "liststatus: %d keys in the directory (%d locked once) in %v, on %s\n", b.keys, b.locked, time.Since(start).Round(time.Millisecond), server)
	return nil
}

// listPages times the first page through the library (the backend is
// prepared), and returns the commands of the last page by name.
func (b *listBench) listPages(ctx context.Context) (took []time.Duration, perPage map[string]int, err error) {
	for range b.runs {
		b.cmds.take()
		t0 := time.Now()
		n := 0
		for _, err := range statuspage.NewReader(b.c).List(ctx, statuspage.ListOptions{Limit: page}) {
			if err != nil {
				return nil, nil, err
			}
			n++
		}
		took = append(took, time.Since(t0))
		perPage = b.cmds.take()
		if n != min(page, b.keys) {
			return nil, nil, fmt.Errorf("listed %d keys, want %d", n, min(page, b.keys))
		}
	}
	return took, perPage, nil
}

// directoryFinds times the directory's part of a page alone: the find
// that ListKeys sends (no sort on FerretDB, the _id index on MongoDB).
func (b *listBench) directoryFinds(ctx context.Context) ([]time.Duration, error) {
	var took []time.Duration
	findOpts := options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(page).SetLimit(page)
	if b.order == statuspage.OrderBytes {
		findOpts.SetSort(bson.D{{Key: "_id", Value: 1}})
	}
	for range b.runs {
		t0 := time.Now()
		cur, err := b.db.Collection(collection+"_keys").Find(ctx, bson.D{}, findOpts)
		if err != nil {
			return nil, err
		}
		n := 0
		for cur.Next(ctx) {
			n++
		}
		cur.Close(ctx)
		took = append(took, time.Since(t0))
		if n != min(page, b.keys) {
			return nil, fmt.Errorf("the directory's find read %d keys, want %d", n, min(page, b.keys))
		}
	}
	return took, nil
}

// firstLocks writes the rows of a fresh Client's first Lock+Unlock of a
// key locked before, and of a key never used.
func (b *listBench) firstLocks(ctx context.Context) error {
	docs, err := b.db.Collection(collection).CountDocuments(ctx, bson.D{})
	if err != nil {
		return err
	}
	for _, used := range []bool{true, false} {
		var ds []time.Duration
		var perLock map[string]int
		for i := range b.runs {
			key := fmt.Sprintf("new/%d", i)
			if used {
				key = b.names[i*b.locked/b.runs]
			}
			d, n, err := firstLock(ctx, b.uri, key)
			if err != nil {
				return err
			}
			ds, perLock = append(ds, d), n
		}
		what := "a key never used"
		if used {
			what = "a key locked and unlocked minutes before"
		}
		row(fmt.Sprintf("a fresh Client's first Lock+Unlock of %s, %d lock documents (%d runs; commands %v)", what, docs, b.runs, perLock), ds)
	}
	return nil
}

// statusCommands writes the rows of the wall time of dsyncBin's status
// page, as a table and as JSON, each a fresh process.
func (b *listBench) statusCommands(dsyncBin string) error {
	for _, args := range [][]string{{"status", "--limit", "100"}, {"status", "--limit", "100", "--json"}} {
		var wall []time.Duration
		for range b.runs {
			cmd := exec.Command(dsyncBin, append([]string{"--uri", b.uri, "--db", dbName}, args...)...)
			cmd.Stderr = os.Stderr
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %w", cmd, err)
			}
			wall = append(wall, time.Since(t0))
		}
		row(fmt.Sprintf("`dsync %s`, wall time of a fresh process (%d runs)", join(args), b.runs), wall)
	}
	return nil
}

// row writes a row of the table: what, and the median, least and most of
// ds (which it sorts).
func row(what string, ds []time.Duration) {
	slices.Sort(ds)
	fmt.Printf("| %s | %v | %v | %v |\n", what, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]))
}

// firstLock connects anew, makes a backend on dbName and times its first
// Lock+Unlock of key (the connection and the backend's preparation are
// not timed); it returns the commands the Lock+Unlock sent, by name.
func firstLock(ctx context.Context, uri, key string) (time.Duration, map[string]int, error) {
	cmds := &counter{}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(cmds.monitor()))
	if err != nil {
		return 0, nil, err
	}
	defer client.Disconnect(ctx)
	store, err := dsyncmongo.NewStore(client.Database(dbName))
	if err != nil {
		return 0, nil, err
	}
	b, err := dsync.NewClient(store)
	if err != nil {
		return 0, nil, err
	}
	defer b.Close()
	// The clock's first samples, not timed. FerretDB may still be busy
	// with the listings' reads ("database is locked"): try a few times.
	for try := 1; ; try++ {
		_, err := store.ServerNow(ctx)
		if err == nil {
			break
		}
		if try == 5 {
			return 0, nil, err
		}
		time.Sleep(time.Second)
	}
	m, err := dsync.NewMutex(b, key)
	if err != nil {
		return 0, nil, err
	}
	cmds.take()
	t0 := time.Now()
	if err := m.LockContext(ctx); err != nil {
		return 0, nil, err
	}
	if err := m.UnlockContext(ctx); err != nil {
		return 0, nil, err
	}
	return time.Since(t0), cmds.take(), nil
}

// fill inserts a directory entry for each key, a thousand at a time.
func fill(ctx context.Context, coll *mongo.Collection, keys []string) error {
	now := time.Now()
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		docs := make([]any, n)
		for i, k := range keys[:n] {
			docs[i] = bson.D{{Key: "_id", Value: k}, {Key: "created", Value: now}}
		}
		if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func join(args []string) string { return strings.Join(args, " ") }

// counter counts the commands a client sends, by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n == nil {
			c.n = make(map[string]int)
		}
		c.n[e.CommandName]++
	}}
}

func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}
