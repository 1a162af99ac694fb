package dsyncmongo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestIdleKeysAreCompactedAndFirstLocksCostTheSame: keys used once and
// left idle past the idle age leave nothing in the lock collection; a
// fresh process's first Lock+Unlock of one of them sends the same
// commands as a fresh process's first Lock+Unlock of the only key of an
// almost empty collection, and gets a token above every one the key had.
func TestIdleKeysAreCompactedAndFirstLocksCostTheSame(t *testing.T) {
	longtest.Skip(t) // it waits out an idle age of 16 s
	const span, idle, keys = 4 * time.Second, 16 * time.Second, 300
	opts := []any{dsync.ClientWithBucketSpan(span), dsync.ClientWithIdleAge(0), withoutWakeups(), dsync.ClientWithTTL(2 * time.Second)}
	big := newProcs(t, 1, opts...)   // the loader (the fresh processes come later)
	small := newProcs(t, 1, opts...) // the same, on a collection of one key
	ctx := testCtx(t, 3*time.Minute)

	load := func(p *proc, n int) map[string]uint64 {
		t.Helper()
		tokens := make(map[string]uint64)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					key := fmt.Sprintf("report-2026-11-23-%d", i)
					m, err := dsync.NewMutex(p.b.Client, key)
					if err != nil {
						t.Error(err)
						return
					}
					if err := m.LockContext(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					tokens[key] = m.Token()
					mu.Unlock()
					m.Unlock()
				}
			})
		}
		wg.Wait()
		return tokens
	}
	bigTokens := load(big[0], keys)
	load(small[0], 1)
	if t.Failed() {
		t.FailNow()
	}
	count := func(p *proc) int64 {
		n, err := p.db.Collection(DefaultCollection).CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	loaded := count(big[0])

	// Past the idle age, and the two buckets a key's coverage reaches.
	time.Sleep(idle + 2*span + time.Second)
	n, err := statuspage.Compact(ctx, big[0].b.Client, idle)
	if err != nil || n < loaded-1 {
		t.Fatalf("Compact = %d, %v; want the %d documents of the %d idle keys deleted", n, err, loaded-1, keys)
	}
	if left := count(big[0]); left > 1 {
		t.Errorf("%d documents left of %d after compacting every key, want at most the protocol document", left, loaded)
	}
	t.Logf("%d keys: %d documents after loading, %d after compaction", keys, loaded, count(big[0]))

	// A start that lands after a bucket began (its insert slow under
	// load) is followed by one more insert, of the next bucket's gate:
	// the claim refreshes its coverage before it holds (dsync/internal/queue,
	// "Segments"). That insert is the clock's doing, not the
	// collection's: each first Lock+Unlock begins as a bucket does, and
	// a pair of them in which one crossed into the next bucket anyway is
	// measured again, by fresh processes, on another compacted key.
	var bigCmds, smallCmds map[string]int
	var key string
	var token uint64
	for round := range 3 {
		if round > 0 {
			// The small collection's key is started again: the gates of
			// its segment of the round before must be past (two buckets
			// after its start's), or the start meets them.
			time.Sleep(2 * span)
		}
		key = fmt.Sprintf("report-2026-11-23-%d", 7+round)
		var bigRefresh, smallRefresh int
		bigCmds, token, bigRefresh = firstLockUnlockInABucket(ctx, t, big[0], span, key, opts)
		smallCmds, _, smallRefresh = firstLockUnlockInABucket(ctx, t, small[0], span, "report-2026-11-23-0", opts)
		if bigRefresh == 0 && smallRefresh == 0 {
			break
		}
		t.Logf("round %d crossed into the next bucket (gate refreshes: %d after compaction, %d on one key): %v and %v", round, bigRefresh, smallRefresh, bigCmds, smallCmds)
	}
	if !maps.Equal(bigCmds, smallCmds) {
		t.Errorf("a fresh process's first Lock+Unlock sent %v after %d keys were compacted, %v on a collection of one key", bigCmds, keys, smallCmds)
	}
	t.Logf("first Lock+Unlock of a fresh process: %v", bigCmds)
	if token <= bigTokens[key] {
		t.Errorf("token %d after compaction, not above the key's earlier %d", token, bigTokens[key])
	}
}

// firstLockUnlockInABucket is firstLockUnlock by a fresh process on on's
// database, begun just after a bucket of span begins (the embedded
// server's clock is this machine's); it also returns how many of the
// inserts into the lock collection carried gates alone (a claim's
// refresh of its coverage, sent when a bucket began since its start).
func firstLockUnlockInABucket(ctx context.Context, t *testing.T, on *proc, span time.Duration, key string, opts []any) (map[string]int, uint64, int) {
	t.Helper()
	cmd := &counter{}
	db := mongotest.SameDatabase(t, on.db, cmd.monitor())
	p := &proc{db: db, b: newBackend(t, db, opts...), cmd: cmd}
	next := (time.Now().UnixNano()/int64(span) + 1) * int64(span)
	time.Sleep(time.Until(time.Unix(0, next).Add(100 * time.Millisecond)))
	var mu sync.Mutex
	refreshes := 0
	sent, token := firstLockUnlock(ctx, t, p, key, func(e *event.CommandStartedEvent) {
		if coll, _ := e.Command.Index(0).Value().StringValueOK(); e.CommandName != "insert" || coll != DefaultCollection {
			return
		}
		docs, _ := e.Command.Lookup("documents").Array().Values()
		if len(docs) == 0 {
			return
		}
		for _, d := range docs {
			if kind, _ := d.Document().Lookup("kind").StringValueOK(); kind != driver.KindGate {
				return
			}
		}
		mu.Lock()
		refreshes++
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	return sent, token, refreshes
}

// TestLongExpiredSessionsGoOnCloseAndSweep: the documents of sessions
// that expired more than sessionRetention ago are deleted when a process
// that made a session closes its backend, and by a sweep, never on the way
// to a Lock: a fresh process's first Lock+Unlock sends nothing to the
// sessions collection but its session's insert and clock samples (on
// FerretDB a delete there decodes every session document, and there is one
// for each process started within the retention).
func TestLongExpiredSessionsGoOnCloseAndSweep(t *testing.T) {
	p := newProcs(t, 1)[0]
	ctx := testCtx(t, time.Minute)
	sessions := p.db.Collection(DefaultCollection + sessionsSuffix)
	now := time.Now()
	insertSession := func(id string, expired time.Duration) {
		t.Helper()
		if _, err := sessions.InsertOne(ctx, sessionDoc{ID: id, ExpiresAt: now.Add(-expired), Host: "h", PID: 1, Started: now.Add(-expired - time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	left := func(when string, want map[string]int64) {
		t.Helper()
		for id, n := range want {
			if got, err := sessions.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); err != nil || got != n {
				t.Errorf("%s: %d documents of session %s (err %v), want %d", when, got, id, err, n)
			}
		}
	}
	insertSession("long-gone~0", sessionRetention+10*time.Minute)
	insertSession("lately~0", 10*time.Minute)

	var mu sync.Mutex
	var toSessions []string
	sent := protocolCommands(p, func(e *event.CommandStartedEvent) {
		if coll, _ := e.Command.Index(0).Value().StringValueOK(); coll == DefaultCollection+sessionsSuffix && kindOf(e) != clockSample {
			mu.Lock()
			toSessions = append(toSessions, e.CommandName)
			mu.Unlock()
		}
	})
	lockUnlockOnce(ctx, t, p, "k")
	sent()
	mu.Lock()
	if !slices.Equal(toSessions, []string{"insert"}) {
		t.Errorf("a fresh process's first Lock+Unlock sent %v to the sessions collection, want its session's insert only", toSessions)
	}
	mu.Unlock()
	left("after a first Lock+Unlock", map[string]int64{"long-gone~0": 1, "lately~0": 1})
	if err := p.b.Close(); err != nil {
		t.Fatal(err)
	}
	left("after Close", map[string]int64{"long-gone~0": 0, "lately~0": 1})

	insertSession("long-gone-2~0", sessionRetention+10*time.Minute)
	sweeper := newBackend(t, p.db)
	if _, err := statuspage.Compact(ctx, sweeper.Client, time.Hour); err != nil {
		t.Fatal(err)
	}
	left("after a sweep", map[string]int64{"long-gone-2~0": 0, "lately~0": 1})
}

// TestSweepDeletesMoreThanOneStatementMayName: Compact and DropGates
// delete every document they select, however many: FerretDB deletes the
// documents of a deleteMany in one SQL statement that names each of them,
// which SQLite refuses beyond 32,766 ("too many SQL variables"), and a
// sweep that fell that far behind deleted nothing ever after. Documents
// the sweep must keep stay.
func TestSweepDeletesMoreThanOneStatementMayName(t *testing.T) {
	longtest.Skip(t)              // it loads 33,000 documents
	const idle, kept = 33000, 100 // idle: above SQLite's 32,766 parameters of a statement
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, withoutWakeups())
	ctx := testCtx(t, 5*time.Minute)
	if _, err := b.s.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection(DefaultCollection)
	sent := time.Now().Add(-time.Hour)
	// insert inserts n gates of keys prefix0... in bucket.
	insert := func(prefix string, n int, bucket int64) {
		t.Helper()
		for i := 0; i < n; i += 1000 {
			docs := make([]any, min(1000, n-i))
			for j := range docs {
				key := fmt.Sprintf("%s%d", prefix, i+j)
				docs[j] = bson.D{{Key: "_id", Value: fmt.Sprintf("%s/g%d", key, bucket)}, {Key: "key", Value: key},
					{Key: "kind", Value: driver.KindGate}, {Key: "bucket", Value: bucket}, {Key: "at", Value: sent}}
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(filter bson.D) int64 {
		t.Helper()
		c, err := coll.CountDocuments(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	insert("idle", idle, 1)
	insert("kept", kept, 100) // keys in use: Compact keeps them
	keep := make([]string, 0, kept)
	for i := range kept {
		keep = append(keep, fmt.Sprintf("kept%d", i))
	}
	deleted, err := b.s.Roles().Maintenance.Compact(ctx, time.Now().Add(-time.Minute), keep)
	if err != nil || deleted != idle {
		t.Errorf("Compact of %d idle keys' documents = %d, %v; want %d deleted", idle, deleted, err, idle)
	}
	if c := count(bson.D{{Key: "bucket", Value: 1}}); c != 0 {
		t.Errorf("%d of the idle keys' %d documents left after Compact, want none", c, idle)
	}
	if c := count(bson.D{{Key: "bucket", Value: 100}}); c != kept {
		t.Errorf("%d of the kept keys' %d documents left after Compact, want all", c, kept)
	}
	if err := b.s.Roles().Maintenance.DropGates(ctx, 101, time.Now().Add(time.Minute)); err != nil {
		t.Errorf("DropGates: %v", err)
	}
	if c := count(bson.D{}); c > 1 {
		t.Errorf("%d documents left after DropGates below every gate's bucket, want at most the protocol document", c)
	}
}

// TestLateCompactSparesANewDoneRecord: a sweep's delete that lands late,
// after another sweep deleted a done record past its expiry and a Do
// inserted the key's record again (the same _id), leaves the new record:
// the delete selects done records by their expiry when it lands, not by
// _id (on FerretDB the sweeps delete other documents by _id).
func TestLateCompactSparesANewDoneRecord(t *testing.T) {
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, withoutWakeups(), withFault(func(op string) error {
		if strings.HasPrefix(op, "compact") {
			once.Do(func() { // the sweep's first delete is held back
				close(held)
				<-release
			})
		}
		return nil
	}))
	ctx := testCtx(t, time.Minute)
	if _, err := b.s.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection(DefaultCollection)
	id := driver.DoneID("slot")
	record := func(at, exp time.Time, nonce string) bson.D {
		return bson.D{{Key: "_id", Value: id}, {Key: "key", Value: "slot"}, {Key: "kind", Value: driver.KindDone},
			{Key: "nonce", Value: nonce}, {Key: "at", Value: at}, {Key: "exp", Value: exp}}
	}
	now := time.Now()
	if _, err := coll.InsertOne(ctx, record(now.Add(-time.Hour), now.Add(-30*time.Minute), "old")); err != nil {
		t.Fatal(err)
	}
	swept := make(chan error, 1)
	go func() {
		_, err := b.s.Roles().Maintenance.Compact(ctx, now.Add(-time.Minute), nil)
		swept <- err
	}()
	select {
	case <-held:
	case err := <-swept:
		t.Fatalf("Compact returned (%v) without sending a delete", err)
	}
	// Meanwhile another sweep deletes the expired record, and a Do of
	// the key inserts it again, to be kept for an hour.
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, record(now, now.Add(time.Hour), "new")); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-swept; err != nil {
		t.Fatal(err)
	}
	var got struct {
		Nonce string `bson:"nonce"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got.Nonce != "new" {
		t.Errorf("after the late sweep, the key's done record is %+v (%v), want the new one", got, err)
	}
}
