package dsyncmongo

import (
	"cmp"
	"context"
	"flag"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

var fifoFor = flag.Duration("fifo.for", 3*time.Second, "how long TestMutexFIFOTightLoop's contenders loop")

// fifoClient counts what one contender's client sends: claim inserts that
// lost their epoch to a duplicate key, claim reads by _id, and failed
// commands by name and message.
type fifoClient struct {
	mu       sync.Mutex
	claims   map[int64]bool // request IDs of claim inserts in flight
	dups     int
	reads    int // finds of a claim by _id
	failures map[string]int
}

func (f *fifoClient) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			f.mu.Lock()
			defer f.mu.Unlock()
			switch e.CommandName {
			case "insert":
				if k, err := e.Command.LookupErr("documents", "0", "kind"); err == nil && k.StringValue() == "claim" {
					f.claims[e.RequestID] = true
				}
			case "find":
				if id, err := e.Command.LookupErr("filter", "_id"); err == nil {
					if s, ok := id.StringValueOK(); ok && strings.Contains(s, "@") && !strings.Contains(s, "~") {
						f.reads++
					}
				}
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.claims[e.RequestID] {
				delete(f.claims, e.RequestID)
				if we, err := e.Reply.LookupErr("writeErrors"); err == nil {
					if strings.Contains(we.String(), "11000") {
						f.dups++
					} else {
						f.failures["insert: "+we.String()]++
					}
				}
			}
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.claims, e.RequestID)
			f.failures[e.CommandName+": "+e.Failure.Error()]++
		},
	})
}

// take returns the counts so far and resets them.
func (f *fifoClient) take() (dups, reads int, failures map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dups, reads, failures = f.dups, f.reads, f.failures
	f.dups, f.reads, f.failures = 0, 0, map[string]int{}
	return dups, reads, failures
}

// TestMutexFIFOTightLoop (issue 23): four contenders, each with its own
// client and backend on one database, lock and unlock one key in a loop
// with no hold time. Every Lock queues behind the three others, so the
// holds must go in a strict rotation: each contender's next hold comes
// exactly four holds after its last.
//
// The start is staged so that the order is known from the first grant:
// contender 0 holds while 1, 2 and 3 queue one after the other. Only
// grants made before the loop's end count: from then on contenders leave,
// and the rest rotate among fewer.
//
// A contender that locks again right after a takeover waits for the one
// it took over from to queue again first, for at most the poll interval
// (relock.go); here up to 2 s, so that a machine busy enough to delay a
// claim by more than 250 ms does not break the rotation. A failed command
// can cost a contender its place (a claim of unknown outcome is withdrawn),
// so with server errors during the loop the rotation is not checked.
func TestMutexFIFOTightLoop(t *testing.T) {
	const n, key = 4, "fifo"
	const minGrants = 4 * n
	run := *fifoFor
	if !longtest.Enabled() {
		run = min(run, 1500*time.Millisecond)
	}
	ctx := testCtx(t, run+3*time.Minute)

	type contender struct {
		db     *mongo.Database
		b      *testClient
		m      *dsync.Mutex
		client *fifoClient
	}
	var reported errTally // from the Mutexes
	cs := make([]*contender, n)
	for i := range cs {
		c := &contender{client: &fifoClient{claims: map[int64]bool{}, failures: map[string]int{}}}
		if i == 0 {
			c.db = mongotest.NewDatabase(t, c.client.monitor())
		} else {
			c.db = mongotest.SameDatabase(t, cs[0].db, c.client.monitor())
		}
		c.b = newBackend(t, c.db, withRelockWindow(2*time.Second), reported.option())
		c.m = newMutex(t, c.b.Client, key)
		cs[i] = c
	}
	// Each backend measures the server's clock, opens its session and
	// follows wake-up events before the loop.
	for _, c := range cs {
		if err := c.m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.m.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cs {
		waitWakeups(t, c.b)
		c.client.take()
	}

	type grant struct {
		who   int
		token uint64
	}
	var (
		mu      sync.Mutex
		grants  []grant
		stopped bool
		timeUp  bool // run has passed: stop once enough grants are in
		inside  atomic.Int32
		stop    atomic.Bool
		failed  atomic.Int32
	)
	fail := func(format string, args ...any) {
		if failed.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	// loop holds (contender i holds already) and then locks again, until
	// the end.
	loop := func(i int) {
		m := cs[i].m
		for {
			if k := inside.Add(1); k != 1 {
				fail("contender %d: %d holders at once", i, k)
			}
			mu.Lock()
			if !stopped {
				grants = append(grants, grant{i, m.Token()})
				if timeUp && len(grants) >= minGrants {
					stopped = true
					stop.Store(true)
				}
			}
			mu.Unlock()
			inside.Add(-1)
			if err := m.UnlockContext(ctx); err != nil {
				fail("contender %d: UnlockContext: %v", i, err)
			}
			if stop.Load() {
				return
			}
			if err := m.LockContext(ctx); err != nil {
				fail("contender %d: LockContext: %v", i, err)
				return
			}
		}
	}

	// Stage the queue: 0 holds, then 1, 2 and 3 queue in this order.
	if err := cs[0].m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	base := cs[0].m.Token()
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			if err := cs[i].m.LockContext(ctx); err != nil {
				fail("contender %d: LockContext: %v", i, err)
				return
			}
			loop(i)
		})
		waitNewest(t, ctx, cs[0].db, key, base+uint64(i))
	}
	// The loop runs for run, and on until minGrants holds went round: a
	// loaded machine makes each grant slower, which is no failure of the
	// rotation this test checks. Past the cap it stops with what it has.
	time.AfterFunc(run, func() {
		mu.Lock()
		timeUp = true
		if len(grants) >= minGrants {
			stopped = true
			stop.Store(true)
		}
		mu.Unlock()
	})
	time.AfterFunc(run+time.Minute, func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		stop.Store(true)
	})
	began := time.Now()
	wg.Go(func() { loop(0) })
	wg.Wait()
	took := time.Since(began).Round(time.Millisecond)

	counts := make([]int, n)
	firstBreak, outOfTurn := -1, 0
	for j, g := range grants {
		counts[g.who]++
		if j > 0 && g.token <= grants[j-1].token {
			fail("grant %d has token %d after %d", j, g.token, grants[j-1].token)
		}
		if g.who != j%n && firstBreak < 0 {
			firstBreak = j
		}
		if j >= n && g.who != grants[j-n].who {
			outOfTurn++
		}
	}
	var seq strings.Builder
	from := max(firstBreak-8, 0)
	for _, g := range grants[from:min(len(grants), from+32)] {
		seq.WriteByte(byte('A' + g.who))
	}
	t.Logf("%d grants in %v: split %v, Jain's index %.3f; %d holds out of turn (grants from %d: %s)",
		len(grants), took, counts, jain(counts), outOfTurn, from, seq.String())

	var dups, reads int
	failures := map[string]int{}
	for _, c := range cs {
		d, r, f := c.client.take()
		dups, reads = dups+d, reads+r
		for k, v := range f {
			failures[k] += v
		}
	}
	t.Logf("per grant: %.2f claim inserts lost to a duplicate key, %.2f claim reads by _id",
		float64(dups)/float64(max(len(grants), 1)), float64(reads)/float64(max(len(grants), 1)))
	ends := endsOf(t, ctx, cs[0].db, key, base)
	t.Logf("claims from epoch %d, by how they ended: %v", base, ends)
	reported.log(t)
	if len(grants) < minGrants {
		t.Errorf("only %d grants in %v and a minute more", len(grants), run)
	}
	if len(failures) > 0 {
		t.Skipf("commands failed during the loop, so a waiter may have lost its place; rotation not checked: %v", failures)
	}
	if firstBreak >= 0 {
		t.Errorf("holds are not a strict rotation: grant %d (token %d) went to %c, want %c (A is the first holder)",
			firstBreak, grants[firstBreak].token, 'A'+grants[firstBreak].who, 'A'+firstBreak%n)
	}
}

// waitNewest waits until key's newest claim has epoch at least epoch.
func waitNewest(t *testing.T, ctx context.Context, db *mongo.Database, key string, epoch uint64) {
	t.Helper()
	coll := db.Collection(DefaultCollection)
	for {
		var d lockDoc
		err := coll.FindOne(ctx, bson.D{{Key: "key", Value: key}, {Key: "kind", Value: "claim"}},
			options.FindOne().SetSort(bson.D{{Key: "epoch", Value: -1}})).Decode(&d)
		if err == nil && uint64(d.Epoch) >= epoch {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("waiting for claim %d of %q: %v", epoch, key, ctx.Err())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// endsOf counts key's claims from epoch base by how they ended ("release",
// "withdraw", "dead", or "none").
func endsOf(t *testing.T, ctx context.Context, db *mongo.Database, key string, base uint64) map[string]int {
	t.Helper()
	cur, err := db.Collection(DefaultCollection).Find(ctx, bson.D{
		{Key: "key", Value: key}, {Key: "epoch", Value: bson.D{{Key: "$gte", Value: int64(base)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ds []lockDoc
	if err := cur.All(ctx, &ds); err != nil {
		t.Fatal(err)
	}
	kind := map[string]string{} // marker _id → kind
	for _, d := range ds {
		if d.Kind != "claim" {
			kind[d.ID] = d.Kind
		}
	}
	ends := map[string]int{}
	for _, d := range ds {
		if d.Kind == "claim" {
			ends[cmp.Or(kind[d.ID+"~"+d.Nonce], "none")]++
		}
	}
	return ends
}

// jain is Jain's fairness index of counts: 1 for an equal split, 1/n when
// one takes everything.
func jain(counts []int) float64 {
	var s, s2 float64
	for _, c := range counts {
		s += float64(c)
		s2 += float64(c) * float64(c)
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(counts)) * s2)
}
