package dsyncmongo

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/drivertest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestDriverConformanceOtherKeyOrder runs the conformance suite with the
// other listing than the server's own: sorted by _id where the server is
// FerretDB, in natural order where it is MongoDB, so that both queries
// are checked on whichever server the tests have. (FerretDB taken for
// MongoDB gets no write timeout, as FerretDB itself does not: its writes
// may take seconds on a busy machine.)
func TestDriverConformanceOtherKeyOrder(t *testing.T) {
	t.Parallel()
	ferret := mongotest.Shared(t).IsFerretDB()
	opts := []any{dsync.ClientWithWakeups(true), asFerretDB(!ferret)}
	if ferret {
		opts = append(opts, WithWriteTimeout(0))
	}
	drivertest.Run(t, func(t *testing.T) driver.Store {
		return newBackend(t, mongotest.NewDatabase(t), opts...).s
	}, drivertest.Peer(func(t *testing.T, first driver.Store) driver.Store {
		return newBackend(t, mongotest.SameDatabase(t, first.(*Store).db), opts...).s
	}))
}

// collCommands counts the commands a client sends, by command name and
// the collection it names, and records the getMores.
type collCommands struct {
	mu      sync.Mutex
	n       map[[2]string]int // {command, collection}
	cursors []int64           // the cursor of each getMore
	batches []int64           // the batch size of each getMore
	// onSucceeded, if set, sees the command name and collection of every
	// command that succeeded.
	onSucceeded func(cmd, coll string)
	inFlight    map[int64][2]string
}

func (c *collCommands) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
			if e.CommandName == "getMore" {
				coll, _ = e.Command.Lookup("collection").StringValueOK()
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.n == nil {
				c.n, c.inFlight = make(map[[2]string]int), make(map[int64][2]string)
			}
			c.n[[2]string{e.CommandName, coll}]++
			c.inFlight[e.RequestID] = [2]string{e.CommandName, coll}
			if e.CommandName == "getMore" {
				id, _ := e.Command.Lookup("getMore").AsInt64OK()
				size, _ := e.Command.Lookup("batchSize").AsInt64OK()
				c.cursors, c.batches = append(c.cursors, id), append(c.batches, size)
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			c.mu.Lock()
			k := c.inFlight[e.RequestID]
			delete(c.inFlight, e.RequestID)
			f := c.onSucceeded
			c.mu.Unlock()
			if f != nil {
				f(k[0], k[1])
			}
		},
	})
}

// take returns the counts so far and resets them.
func (c *collCommands) take() (n map[[2]string]int, cursors, batches []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, cursors, batches = c.n, c.cursors, c.batches
	c.n, c.cursors, c.batches = make(map[[2]string]int), nil, nil
	return n, cursors, batches
}

// TestListKeysStreamsOnOneCursor: a listing of 10,000 keys is one find
// and a getMore per 100 keys on the same cursor, in the order the store
// declares, the first key before any getMore: nothing loads the whole
// directory at once. A prefix with a limit is one find.
func TestListKeysStreamsOnOneCursor(t *testing.T) {
	// Not in parallel: beside the package's parallel tests, on FerretDB
	// over PostgreSQL, the listing once came back in another order than
	// the keys were inserted in (first use order); not seen in runs of
	// the test alone.
	const n = 10_000
	for _, ferret := range []bool{false, true} {
		t.Run(fmt.Sprintf("asFerretDB=%v", ferret), func(t *testing.T) {
			ctx := testCtx(t, 2*time.Minute)
			cmds := &collCommands{}
			db := mongotest.NewDatabase(t, cmds.monitor())
			b := newBackend(t, db, asFerretDB(ferret))
			if _, err := b.ServerTime(ctx); err != nil { // prepares the store
				t.Fatal(err)
			}
			keys := make([]string, n)
			docs := make([]any, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("k/%05d", (i*7919)%n) // recorded out of order
				docs[i] = keyDoc{ID: keys[i], Created: time.Now()}
			}
			if _, err := db.Collection(DefaultCollection+keysSuffix).InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			order := b.s.Roles().Directory.KeyOrder()
			want := slices.Clone(keys)
			if order == driver.OrderBytes {
				slices.Sort(want)
			}
			keysColl := DefaultCollection + keysSuffix
			cmds.take()

			var got []string
			for k, err := range b.s.Roles().Directory.ListKeys(ctx, driver.KeyQuery{}) {
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 {
					first, cursors, _ := cmds.take()
					if first[[2]string{"find", keysColl}] != 1 || len(cursors) != 0 {
						t.Errorf("commands before the first key: %v; want one find, no getMore", first)
					}
				}
				got = append(got, k)
			}
			rest, cursors, batches := cmds.take()
			if !slices.Equal(got, want) {
				t.Errorf("listed %d keys, want the %d recorded, in %v order", len(got), len(want), order)
			}
			if gm := rest[[2]string{"getMore", keysColl}]; gm < n/listBatch-1 || gm > n/listBatch {
				t.Errorf("%d getMores for %d keys; want one per %d keys (%v)", gm, n, listBatch, rest)
			}
			for i := range cursors {
				if cursors[i] != cursors[0] || batches[i] != listBatch {
					t.Fatalf("getMore %d: cursor %d, batch %d; want cursor %d, batch %d", i, cursors[i], batches[i], cursors[0], listBatch)
				}
			}
			t.Logf("%d keys (%v): %v", len(got), order, rest)

			// A page of a prefix: one find.
			var page []string
			for k, err := range b.s.Roles().Directory.ListKeys(ctx, driver.KeyQuery{Prefix: "k/01", Limit: 50}) {
				if err != nil {
					t.Fatal(err)
				}
				page = append(page, k)
			}
			cmdsPage, _, _ := cmds.take()
			wantPage := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k < "k/01" || k >= "k/02" })[:50]
			if !slices.Equal(page, wantPage) || cmdsPage[[2]string{"find", keysColl}] != 1 || cmdsPage[[2]string{"getMore", keysColl}] != 0 {
				t.Errorf("a page of 50 keys with prefix k/01: %q, %v; want %q in one find", page, cmdsPage, wantPage)
			}
		})
	}
}

// TestKeyRecordedOnceAndLockUnlockStaysTwoCommands: a fresh process's
// first Lock of a key records it in the directory with one insert, in the
// background; a second process records it again (answered with a
// duplicate key); after that an uncontended Lock+Unlock loop sends
// nothing to the directory, and two inserts per cycle.
func TestKeyRecordedOnceAndLockUnlockStaysTwoCommands(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	keysColl := DefaultCollection + keysSuffix
	var db *mongo.Database
	for i := range 2 {
		cmds := &collCommands{}
		put := make(chan struct{}, 1)
		cmds.onSucceeded = func(cmd, coll string) {
			if cmd == "insert" && coll == keysColl {
				put <- struct{}{}
			}
		}
		if i == 0 {
			db = mongotest.NewDatabase(t, cmds.monitor())
		} else {
			db = mongotest.SameDatabase(t, db, cmds.monitor())
		}
		b := newBackend(t, db, dsync.ClientWithTTL(time.Minute))
		m := newMutex(t, b.Client, "k")
		cycle := func() {
			if err := m.LockContext(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.UnlockContext(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cycle()
		select {
		case <-put:
		case <-ctx.Done():
			t.Fatal("process", i, "did not record the key")
		}
		waitWakeups(t, b)
		first, _, _ := cmds.take()
		if first[[2]string{"insert", keysColl}] != 1 {
			t.Errorf("process %d's first Lock+Unlock: %d inserts into %s, want 1", i, first[[2]string{"insert", keysColl}], keysColl)
		}
		const cycles = 100
		for range cycles {
			cycle()
		}
		n, _, _ := cmds.take()
		dir, inserts := 0, n[[2]string{"insert", DefaultCollection}]
		for k, v := range n {
			if k[1] == keysColl {
				dir += v
			}
		}
		if dir != 0 {
			t.Errorf("process %d: %d commands on the directory in %d cycles, want none: %v", i, dir, cycles, n)
		}
		if floors := inserts - 2*cycles; floors < 0 || floors > cycles/16+1 {
			t.Errorf("process %d: %d inserts for %d cycles, want two per cycle (claim, release), and a floor per 16: %v", i, inserts, cycles, n)
		}
	}
	var listed []string
	for k, err := range statuspage.NewReader(newBackend(t, db).Client).List(ctx, statuspage.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, k.Key)
	}
	if !slices.Equal(listed, []string{"k"}) {
		t.Errorf("List() = %q, want k once", listed)
	}
	var entries []bson.M
	cur, err := db.Collection(keysColl).Find(ctx, bson.D{})
	if err == nil {
		err = cur.All(ctx, &entries)
	}
	if err != nil || len(entries) != 1 || entries[0]["_id"] != "k" || entries[0]["created"] == nil {
		t.Errorf("the directory holds %v (%v), want {_id: k, created}", entries, err)
	}
}

// TestKeyPutIsOffTheLockPath: while the directory's insert hangs, Lock
// and Unlock go on; Close waits for it.
func TestKeyPutIsOffTheLockPath(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	b, err := newTestClient(mongotest.NewDatabase(t), withFault(func(op string) error {
		if op == "keys" {
			entered <- struct{}{}
			<-release
		}
		return nil
	}), dsync.ClientWithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	m := newMutex(t, b.Client, "k")
	for range 3 {
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select { // the put was sent, and still hangs
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the key's put was never sent")
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the put hung", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// waitRecorded waits until the directory of keys on db holds n keys: a
// Client records the keys it claims in the background, and a test that
// counts the commands of what follows must not count those inserts.
func waitRecorded(t *testing.T, ctx context.Context, db *mongo.Database, n int) {
	t.Helper()
	for {
		recorded, err := db.Collection(DefaultCollection+keysSuffix).CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if recorded >= int64(n) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
