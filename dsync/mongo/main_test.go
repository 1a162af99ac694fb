package dsyncmongo

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestMain(m *testing.M) {
	// The parallel tests mostly wait on the server: four at a time, not
	// GOMAXPROCS (mongotest.ParallelAtLeast).
	mongotest.ParallelAtLeast(4)
	mongotest.MainWithLeakCheck(m)
}

// testCtx is a context for one test, bounded so a hang fails instead of
// stalling the package.
func testCtx(t testing.TB, d time.Duration) context.Context {
	// Three times d: the bounds only stop a test that waits in vain, and
	// a machine busy at four times its cores slows the server and the
	// processes several-fold.
	ctx, cancel := context.WithTimeout(context.Background(), 3*d)
	t.Cleanup(cancel)
	return ctx
}

// counter counts the commands a client sends, by command name.
type counter struct {
	mu   sync.Mutex
	n    map[string]int           // commands by kind (see kindOf)
	took map[string]time.Duration // total duration of succeeded commands
	kind map[int64]string         // the kind of each command in flight, by request ID
	// onStart and onSucceeded, if set, see every started and succeeded
	// command, with its kind.
	onStart     func(*event.CommandStartedEvent)
	onSucceeded func(kind string, e *event.CommandSucceededEvent)
	// onFailed, if set, sees every failed command.
	onFailed func(e *event.CommandFailedEvent)
}

// clockSample is the kind of the server-time samples' findAndModify on the
// clock document; a findAndModify of a session document, a renewal, keeps
// its command name.
const clockSample = "clock sample"

// kindOf is the command's name, except for server-time samples.
func kindOf(e *event.CommandStartedEvent) string {
	if e.CommandName == "findAndModify" {
		if id, err := e.Command.LookupErr("query", "_id"); err == nil && id.StringValue() == clockID {
			return clockSample
		}
	}
	return e.CommandName
}

func (c *counter) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.n == nil {
				c.n = make(map[string]int)
			}
			k := kindOf(e)
			c.n[k]++
			if c.kind == nil {
				c.kind = make(map[int64]string)
			}
			c.kind[e.RequestID] = k
			if c.onStart != nil {
				c.onStart(e)
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			c.mu.Lock()
			if c.took == nil {
				c.took = make(map[string]time.Duration)
			}
			k := c.kind[e.RequestID]
			delete(c.kind, e.RequestID)
			c.took[k] += e.Duration
			c.mu.Unlock()
			if c.onSucceeded != nil {
				c.onSucceeded(k, e)
			}
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			c.mu.Lock()
			delete(c.kind, e.RequestID)
			f := c.onFailed
			c.mu.Unlock()
			if f != nil {
				f(e)
			}
		},
	})
}

// take returns the counts so far and resets them (and the durations).
func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n, c.took = nil, nil
	if n == nil {
		n = map[string]int{}
	}
	return n
}

// latency returns the mean duration of the succeeded commands of each name
// so far (reset by take).
func (c *counter) latency() map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]time.Duration, len(c.took))
	for k, d := range c.took {
		if n := c.n[k]; n > 0 {
			m[k] = (d / time.Duration(n)).Round(10 * time.Microsecond)
		}
	}
	return m
}

// protocolCommands counts what p sends from now until the returned
// function is called, which returns the counts by command and
// collection: all but the server-time samples and the commands on the
// sessions collection and the directory of keys, which run on their own
// schedule (the lease's insert and renewals; the directory's insert of a
// key, in the background after its claim), so that under load one falls
// inside a measured call or not. also, if not nil, sees every command
// started meanwhile.
func protocolCommands(p *proc, also func(*event.CommandStartedEvent)) (stop func() map[string]int) {
	var mu sync.Mutex
	n := make(map[string]int)
	counting := true
	p.cmd.mu.Lock()
	p.cmd.onStart = func(e *event.CommandStartedEvent) {
		if also != nil {
			also(e)
		}
		coll, _ := e.Command.Index(0).Value().StringValueOK()
		if kindOf(e) == clockSample || coll == DefaultCollection+sessionsSuffix || coll == DefaultCollection+keysSuffix {
			return
		}
		mu.Lock()
		if counting {
			n[e.CommandName+" "+coll]++
		}
		mu.Unlock()
	}
	p.cmd.mu.Unlock()
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		counting = false
		return n
	}
}

// lockUnlockOnce locks and unlocks key once through p and returns
// the hold's token.
func lockUnlockOnce(ctx context.Context, t *testing.T, p *proc, key string) uint64 {
	t.Helper()
	m, err := dsync.NewMutex(p.b.Client, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	token := m.Token()
	if err := m.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	return token
}

// warmUp prepares b as its first write does (the lock index, the clock
// estimator, the store's protocol document), by opening a session of its
// own: a read (Current) prepares only for reading.
func warmUp(ctx context.Context, t *testing.T, b *testClient) {
	t.Helper()
	if _, err := b.raw.OpenSession(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// firstLockUnlock is a fresh process's first Lock+Unlock of key: the
// protocol's commands it sends (protocolCommands, also seeing each) and
// the hold's token. The process is prepared first (indexes, the clock),
// as any process is after its first call.
func firstLockUnlock(ctx context.Context, t *testing.T, p *proc, key string, also func(*event.CommandStartedEvent)) (map[string]int, uint64) {
	t.Helper()
	warmUp(ctx, t, p.b)
	sent := protocolCommands(p, also)
	token := lockUnlockOnce(ctx, t, p, key)
	return sent(), token
}

// lockOps is the number of commands of the lock protocol among n (not
// the clock estimator's samples).
func lockOps(n map[string]int) int {
	return n["insert"] + n["update"] + n["findAndModify"] + n["find"] + n["delete"]
}

// proc is one simulated process: its own client, with a command counter,
// and its own backend.
type proc struct {
	db  *mongo.Database
	b   *testClient
	cmd *counter
}

// newProcs returns n processes sharing one fresh database.
func newProcs(t *testing.T, n int, opts ...any) []*proc {
	t.Helper()
	ps := make([]*proc, n)
	for i := range ps {
		c := &counter{}
		var db *mongo.Database
		if i == 0 {
			db = mongotest.NewDatabase(t, c.monitor())
		} else {
			db = mongotest.SameDatabase(t, ps[0].db, c.monitor())
		}
		ps[i] = &proc{db: db, b: newBackend(t, db, opts...), cmd: c}
	}
	return ps
}

func newBackend(t *testing.T, db *mongo.Database, opts ...any) *testClient {
	t.Helper()
	b, err := newTestClient(db, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// skewClock is the system clock with its wall time shifted by off.
type skewClock struct{ off time.Duration }

func (c skewClock) Wall() time.Time { return clockcheck.SystemClock().Wall().Add(c.off) }
func (skewClock) Monotonic() time.Duration {
	return clockcheck.SystemClock().Monotonic()
}

// docs returns the documents of key's chain (claims, markers, floor),
// lowest epoch first.
func docs(t *testing.T, db *mongo.Database, key string) []lockDoc {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	cur, err := db.Collection(DefaultCollection).Find(ctx, bson.D{{Key: "key", Value: key}},
		options.Find().SetSort(bson.D{{Key: "epoch", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var ds []lockDoc
	if err := cur.All(ctx, &ds); err != nil {
		t.Fatal(err)
	}
	return ds
}
