package dsyncmongo

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// withFault installs a test fault hook.
func withFault(f func(op string) error) Option {
	return func(c *config) error { c.tests().fault = f; return nil }
}

// asFerretDB overrides the detection of FerretDB.
func asFerretDB(is bool) Option {
	return func(c *config) error { c.tests().ferretDB = &is; return nil }
}

// logRecords collects what a backend logs.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// warnings returns the messages logged at Warn or above that contain s.
func (l *logRecords) warnings(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var msgs []string
	for _, r := range l.recs {
		if r.Level >= slog.LevelWarn && strings.Contains(r.Message, s) {
			msgs = append(msgs, r.Message)
		}
	}
	return msgs
}

var errUnauthorized = mongo.CommandError{Code: 13, Name: "Unauthorized",
	Message: "not authorized on db to execute command { createIndexes: \"dsync_locks\" }"}

// faultOn returns a hook failing op with err.
func faultOn(op string, err error) func(string) error {
	return func(o string) error {
		if o == op {
			return err
		}
		return nil
	}
}

func createIndex(t *testing.T, db *mongo.Database, name string, keys bson.D, unique bool) {
	t.Helper()
	_, err := db.Collection(DefaultCollection).Indexes().CreateOne(testCtx(t, 30*time.Second), mongo.IndexModel{
		Keys: keys, Options: options.Index().SetName(name).SetUnique(unique),
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	lockKeys = bson.D{{Key: "key", Value: 1}, {Key: "kind", Value: 1}, {Key: "epoch", Value: 1}}
	v1Keys   = bson.D{{Key: "key", Value: 1}, {Key: "epoch", Value: 1}}
)

// lockAndEnd opens a session, claims key, awaits the hold and ends it.
func lockAndEnd(ctx context.Context, b *testClient, key string) error {
	s, err := b.raw.OpenSession(ctx, time.Minute)
	if err != nil {
		return err
	}
	c, err := b.raw.Claim(ctx, key, "o", s, false)
	if err != nil {
		return err
	}
	if err := b.raw.Await(ctx, c); err != nil {
		return err
	}
	return b.raw.End(ctx, c, true)
}

// TestIndexEquivalentExisting: when creating the index fails, for want of
// the privilege (simulated) or because an equivalent one exists under
// another name (IndexOptionsConflict), the backend carries on.
func TestIndexEquivalentExisting(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault error
	}{
		{"another name", nil},
		{"no privilege", errUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			createIndex(t, db, "by_key_kind_epoch", lockKeys, false)
			b := newBackend(t, db, withFault(faultOn("createIndexes", tc.fault)))
			if err := lockAndEnd(testCtx(t, 30*time.Second), b, "k"); err != nil {
				t.Fatalf("Lock and Unlock with an equivalent index in place: %v", err)
			}
		})
	}
}

// TestIndexMissingOrConflicting: without an equivalent index, the error
// names the index, the collection and the privilege.
func TestIndexMissingOrConflicting(t *testing.T) {
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, withFault(faultOn("createIndexes", errUnauthorized)))
	_, err := b.raw.OpenSession(testCtx(t, 30*time.Second), time.Minute)
	if !errors.Is(err, ErrIndex) {
		t.Fatalf("OpenSession = %v, want ErrIndex", err)
	}
	for _, s := range []string{`"key_1_kind_1_epoch_1"`, `collection "dsync_locks"`, "createIndex privilege", "no equivalent index exists", "Unauthorized", "WithIndexManagement(false)"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

// TestIndexUniqueRefused: a unique index on fields claims and markers
// share refuses end markers (each would fail as a duplicate key, which
// reads as "already ended"): the backend refuses to run until it is
// dropped. The first is the index an older dsync (protocol v1) created.
func TestIndexUniqueRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys bson.D
		want []string
	}{
		{"key_1_epoch_1", v1Keys, []string{"older dsync", `dropIndex("key_1_epoch_1")`}},
		{"by_key_kind_epoch", lockKeys, []string{`dropIndex("by_key_kind_epoch")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			createIndex(t, db, tc.name, tc.keys, true)
			b := newBackend(t, db)
			ctx := testCtx(t, 30*time.Second)
			err := lockAndEnd(ctx, b, "k")
			if !errors.Is(err, ErrIndex) {
				t.Fatalf("Lock and Unlock = %v, want ErrIndex", err)
			}
			for _, s := range append(tc.want, "refuses the end markers", `collection "dsync_locks"`) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			// Dropped, the next call gets through.
			if err := db.Collection(DefaultCollection).Indexes().DropOne(ctx, tc.name); err != nil {
				t.Fatal(err)
			}
			if err := lockAndEnd(ctx, b, "k"); err != nil {
				t.Fatalf("after dropping the index: %v", err)
			}
		})
	}
}

// TestIndexManagementOff: WithIndexManagement(false) neither creates nor
// lists indexes, and the backend works without the index.
func TestIndexManagementOff(t *testing.T) {
	c := &counter{}
	db := mongotest.NewDatabase(t, c.monitor())
	b := newBackend(t, db, WithIndexManagement(false), withFault(faultOn("createIndexes", errUnauthorized)))
	ctx := testCtx(t, 30*time.Second)
	for range 2 {
		if err := lockAndEnd(ctx, b, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.take(); n["createIndexes"] != 0 || n["listIndexes"] != 0 {
		t.Errorf("commands %v: want no index management", n)
	}
	if _, err := b.Current(ctx, "k"); !errors.Is(err, errNoLock) {
		t.Fatalf("Current = %v, want errNoLock", err)
	}
}

// TestEquivalentIndex: which existing indexes stand in for the lock
// index, and which refuse end markers.
func TestEquivalentIndex(t *testing.T) {
	key := func(kv ...any) bson.E {
		var d bson.D
		for i := 0; i < len(kv); i += 2 {
			d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		return bson.E{Key: "key", Value: d}
	}
	std := key("key", int32(1), "kind", int32(1), "epoch", int32(1))
	unique := bson.E{Key: "unique", Value: true}
	for _, tc := range []struct {
		name   string
		spec   bson.D
		want   bool // equivalent
		blocks bool // refuses end markers
	}{
		{"the one created", bson.D{std, {Key: "name", Value: "key_1_kind_1_epoch_1"}}, true, false},
		{"descending, doubles", bson.D{key("key", -1.0, "kind", 1.0, "epoch", -1.0)}, true, false},
		{"simple collation", bson.D{std, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}}, true, false},
		{"unique false", bson.D{std, {Key: "unique", Value: false}}, true, false},
		{"unique", bson.D{std, unique}, false, true},
		{"v1 unique (key, epoch)", bson.D{key("key", 1, "epoch", 1), unique}, false, true},
		{"unique on key alone", bson.D{key("key", 1), unique}, false, true},
		{"unique with nonce", bson.D{key("key", 1, "epoch", 1, "nonce", 1), unique}, false, false},
		{"v1 keys, not unique", bson.D{key("key", 1, "epoch", 1)}, false, false},
		{"keys swapped", bson.D{key("key", 1, "epoch", 1, "kind", 1)}, false, false},
		{"text key", bson.D{key("key", "text", "kind", 1, "epoch", 1)}, false, false},
		{"partial", bson.D{std, {Key: "partialFilterExpression", Value: bson.D{{Key: "kind", Value: "claim"}}}}, false, false},
		{"collation", bson.D{std, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}}, false, false},
		{"hidden", bson.D{std, {Key: "hidden", Value: true}}, false, false},
	} {
		raw, err := bson.Marshal(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := bson.Raw(raw).Lookup("key").DocumentOK()
		if got := sameKeys(keys) && equivalentIndex(raw); got != tc.want {
			t.Errorf("%s: equivalent = %v, want %v", tc.name, got, tc.want)
		}
		if got := blocksMarkers(raw, keys); got != tc.blocks {
			t.Errorf("%s: refuses markers = %v, want %v", tc.name, got, tc.blocks)
		}
	}
}

// blockWrites returns client options whose monitor holds every command
// named cmd, while armed, until its context ends (at most 10 s): a server
// that cannot acknowledge writes. Armed, it records whether the command
// carried maxTimeMS.
func blockWrites(cmd string) (opts *options.ClientOptions, arm func(bool), sawMaxTime func() bool) {
	var armed, maxTime atomic.Bool
	opts = options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			if e.CommandName != cmd || !armed.Load() {
				return
			}
			if _, err := e.Command.LookupErr("maxTimeMS"); err == nil {
				maxTime.Store(true)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
		},
	})
	return opts, armed.Store, maxTime.Load
}

// TestWriteTimeout: a write the server does not acknowledge fails after
// the write timeout with an error that says so, not when the caller's
// context ends; the command carries the deadline as maxTimeMS. Here the
// end marker's insert.
func TestWriteTimeout(t *testing.T) {
	opts, arm, sawMaxTime := blockWrites("insert")
	db := mongotest.NewDatabase(t, opts)
	const limit = 200 * time.Millisecond
	b := newBackend(t, db, asFerretDB(false), WithWriteTimeout(limit), withoutWakeups())
	ctx := testCtx(t, 30*time.Second)
	s := open(t, ctx, b, time.Minute)
	c := claimed(t, ctx, b, "k", "o", s)
	if err := b.raw.Await(ctx, c); err != nil {
		t.Fatal(err)
	}
	arm(true)
	ctx = testCtx(t, 5*time.Second)
	start := time.Now()
	err := b.raw.End(ctx, c, true)
	took := time.Since(start)
	arm(false)
	if !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("End = %v after %v, want ErrWriteTimeout", err, took)
	}
	for _, s := range []string{`end "k": not acknowledged within the write timeout of 200ms`, "majority", "outcome is unknown"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if took > 2*time.Second || ctx.Err() != nil {
		t.Errorf("End took %v: not bounded by the write timeout", took)
	}
	if !sawMaxTime() {
		t.Error("the insert did not carry maxTimeMS")
	}
}

// TestNoWriteTimeoutOnFerretDB: FerretDB does not replicate, and its
// writes may legitimately take seconds: they get no write timeout. (The
// Client bounds its inserts into the directory of keys itself: one that
// fails is sent again at a later claim.)
func TestNoWriteTimeoutOnFerretDB(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("needs FerretDB")
	}
	var maxTime atomic.Int32
	db := mongotest.NewDatabase(t, options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if coll, _ := e.Command.Lookup(e.CommandName).StringValueOK(); coll == DefaultCollection+keysSuffix {
				return
			}
			if _, err := e.Command.LookupErr("maxTimeMS"); err == nil && (e.CommandName == "insert" || e.CommandName == "update" || e.CommandName == "findAndModify") {
				maxTime.Add(1)
			}
		},
	}))
	b := newBackend(t, db)
	ctx := context.Background() // no deadline: only the backend's could add maxTimeMS
	s := open(t, ctx, b, time.Minute)
	if err := b.raw.RenewSession(ctx, s, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := lockAndEnd(ctx, b, "k"); err != nil {
		t.Fatal(err)
	}
	if !b.s.platform.isFerret() {
		t.Error("FerretDB not detected")
	}
	if n := maxTime.Load(); n != 0 {
		t.Errorf("%d writes carried maxTimeMS on FerretDB", n)
	}
}

var (
	errRetryable = mongo.CommandError{Code: 189, Name: "PrimarySteppedDown", Message: "primary stepped down", Labels: []string{"RetryableWriteError"}}
	errNetwork   = mongo.CommandError{Message: "connection reset", Labels: []string{"NetworkError"}}
	errBusy      = mongo.CommandError{Code: 1, Name: "InternalError", Message: "[sqlite.go:123 sqlite.(*collection).UpdateAll] database is locked (5) (SQLITE_BUSY)"}
	errConflict  = mongo.CommandError{Code: 112, Name: "WriteConflict", Message: "write conflict"}
	errBadValue  = mongo.CommandError{Code: 2, Name: "BadValue", Message: "bad value"}
	errNotWanted = mongo.CommandError{Code: 13, Name: "Unauthorized", Message: "not authorized"}
)

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errRetryable, true},
		{errNetwork, true},
		{errBusy, true},
		{mongo.CommandError{Code: 1, Name: "InternalError", Message: "[msg_insert.go:168 handler.(*Handler).MsgInsert] [collection.go:135 sqlite.(*collection).InsertAll.func1] SQL logic error: no such table: locks_b3f43a_tput4_8b200ccd (1)"}, true},
		{errConflict, true},
		{mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 112, Message: "write conflict"}}}, true},
		{errBadValue, false},
		{errNotWanted, false},
		{context.DeadlineExceeded, false},
		{&writeTimeoutError{limit: time.Second, err: errNetwork}, false},
		{errors.New("something else"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// faults returns a fault hook failing op with errs[i] at its i-th call
// (nil beyond), and the number of calls.
func faults(op string, errs ...error) (func(string) error, func() int) {
	var mu sync.Mutex
	n := 0
	return func(o string) error {
			if o != op {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			n++
			if n <= len(errs) {
				return errs[n-1]
			}
			return nil
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// sameCommandError reports whether err carries want's message.
func sameCommandError(err, want error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Message == want.(mongo.CommandError).Message
}

// checkAttempts checks a call whose command failed with injected errors:
// it succeeded if wantErr is nil, else failed with wantErr, after
// wantCalls attempts.
func checkAttempts(t *testing.T, call string, err, wantErr error, calls, wantCalls int) {
	t.Helper()
	switch {
	case wantErr == nil && err != nil:
		t.Errorf("%s = %v, want it retried and applied", call, err)
	case wantErr != nil && !sameCommandError(err, wantErr):
		t.Errorf("%s = %v, want %v", call, err, wantErr)
	}
	if calls != wantCalls {
		t.Errorf("%s: %d attempts, want %d", call, calls, wantCalls)
	}
}

// sessionDocs returns the expiry of each document of session id, by _id.
func sessionDocs(t *testing.T, ctx context.Context, db *mongo.Database, id string) map[string]time.Time {
	t.Helper()
	cur, err := db.Collection(DefaultCollection+sessionsSuffix).Find(ctx, sessionDocsFilter(id))
	if err != nil {
		t.Fatal(err)
	}
	var ds []sessionDoc
	if err := cur.All(ctx, &ds); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]time.Time)
	for _, d := range ds {
		if _, ok := sessionGenOf(id, d.ID); ok {
			out[d.ID] = d.ExpiresAt
		}
	}
	return out
}

// TestRenewAfterUnknownOutcomeMovesOn: once a renewal of a session
// document fails (its update may still be applied, even after later ones,
// and FerretDB would then write back its lower expiry), that document is
// never updated again. The renewal inserts the session's next document at
// once, later renewals update that one, an insert of unknown outcome is
// sent again, and readers see the highest expiry of all.
func TestRenewAfterUnknownOutcomeMovesOn(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failInserts int  // inserts of the next document that fail
		landed      bool // the failed insert was applied nonetheless
		wantErr     bool // the first RenewSession fails
	}{
		{"next document inserted at once", 0, false, false},
		{"its insert failed and is sent again", 1, false, true},
		{"its insert failed after it was applied", 1, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			var mu sync.Mutex
			failRenew, failInsert, opened := 1, tc.failInserts, false
			fault := func(op string) error {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case op == "session" && !opened:
					opened = true // the session's first document
				case op == "renew" && failRenew > 0:
					failRenew--
					return errNetwork
				case op == "session" && failInsert > 0:
					failInsert--
					return errNetwork
				}
				return nil
			}
			b := newBackend(t, db, withFault(fault), withoutWakeups())
			ctx := testCtx(t, 30*time.Second)
			s := open(t, ctx, b, time.Minute)
			first := sessionDocs(t, ctx, db, s)[s]
			next := s + "~1"
			if tc.landed {
				// The reply was lost, not the request.
				if _, err := db.Collection(DefaultCollection+sessionsSuffix).InsertOne(ctx, sessionDoc{ID: next, ExpiresAt: first}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Millisecond) // each renewal's expiry is later
			if err := b.raw.RenewSession(ctx, s, time.Minute); (err != nil) != tc.wantErr {
				t.Fatalf("first RenewSession = %v, want an error: %v", err, tc.wantErr)
			}
			for range 2 {
				time.Sleep(5 * time.Millisecond)
				if err := b.raw.RenewSession(ctx, s, time.Minute); err != nil {
					t.Fatalf("RenewSession = %v", err)
				}
			}
			got := sessionDocs(t, ctx, db, s)
			if !got[s].Equal(first) {
				t.Errorf("the first document's expiry moved from %v to %v after its renewal failed", first, got[s])
			}
			if len(got) != 2 || !got[next].After(first) {
				t.Fatalf("session documents %v: want %s and %s, the second renewed past %v", got, s, next, first)
			}
			sess, found, err := b.s.GetSession(ctx, s)
			if err != nil || !found || !sess.ExpiresAt.Equal(got[next]) || sess.Gen != 1 {
				t.Errorf("GetSession = %+v, %v, %v; want generation 1 expiring %v", sess, found, err, got[next])
			}
		})
	}
}

// released reports whether key's claim of epoch has a release marker.
func released(t *testing.T, db *mongo.Database, key string, epoch uint64) bool {
	t.Helper()
	for _, d := range docs(t, db, key) {
		if d.Epoch == int64(epoch) && d.Kind == queue.KindRelease {
			return true
		}
	}
	return false
}

// TestEndRetriesOnlyTransient: an end marker's insert is sent again on
// transient failures (FerretDB's SQLITE_BUSY among them), up to three
// times, not on others.
func TestEndRetriesOnlyTransient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		errs      []error
		wantErr   bool
		wantCalls int
	}{
		{"busy", []error{errBusy, errBusy}, false, 3},
		{"retryable then conflict", []error{errRetryable, errConflict}, false, 3},
		{"network", []error{errNetwork}, false, 2},
		{"busy throughout", []error{errBusy, errBusy, errBusy, errBusy}, true, endAttempts},
		{"not transient", []error{errBadValue}, true, 1},
		{"not authorized", []error{errNotWanted}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fault, calls := faults("end", tc.errs...)
			db, token, err := endWithFault(t, fault)
			if (err != nil) != tc.wantErr {
				t.Errorf("End = %v, want error: %v", err, tc.wantErr)
			}
			if n := calls(); n != tc.wantCalls {
				t.Errorf("%d end marker inserts, want %d", n, tc.wantCalls)
			}
			if got := released(t, db, "k", token); got == tc.wantErr {
				t.Errorf("released: %v, want %v", got, !tc.wantErr)
			}
		})
	}
}

// TestEndRetriesPause: the attempts of an end marker are spread out, so
// that a server busy for a moment with another write (FerretDB's SQLite
// answering "database is locked" for 30 ms here) does not see all three.
// Sent at once, as before, all three failed and Unlock reported the
// error (TestMutexRenewsManyLocks, now and then in CI).
func TestEndRetriesPause(t *testing.T) {
	var mu sync.Mutex
	var first time.Time
	busyFor := 30 * time.Millisecond
	fault := func(op string) error {
		if op != "end" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() {
			first = time.Now()
		}
		if time.Since(first) < busyFor {
			return errBusy
		}
		return nil
	}
	db, token, err := endWithFault(t, fault)
	if err != nil {
		t.Fatalf("End with the server busy for %v: %v", busyFor, err)
	}
	if !released(t, db, "k", token) {
		t.Error("not released")
	}
}

// endWithFault claims key "k" on a new database through a backend whose
// writes go through fault, holds it, and ends the claim; it returns the
// database, the claim's token and End's error.
func endWithFault(t *testing.T, fault func(op string) error) (*mongo.Database, uint64, error) {
	t.Helper()
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, withFault(fault), withoutWakeups())
	ctx := testCtx(t, 30*time.Second)
	s := open(t, ctx, b, time.Minute)
	c := claimed(t, ctx, b, "k", "o", s)
	if err := b.raw.Await(ctx, c); err != nil {
		t.Fatal(err)
	}
	return db, c.Epoch, b.raw.End(ctx, c, true)
}

// TestClaimNotRetried: a claim insert that fails, even transiently, is
// not sent again by the store: its outcome is unknown, and the engine
// withdraws it by its nonce.
func TestClaimNotRetried(t *testing.T) {
	fault, calls := faults("claim", errRetryable)
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, withFault(fault), withoutWakeups())
	ctx := testCtx(t, 30*time.Second)
	s := open(t, ctx, b, time.Minute)
	if _, err := b.raw.Claim(ctx, "k", "o", s, false); !sameCommandError(err, errRetryable) {
		t.Fatalf("Claim = %v, want %v", err, errRetryable)
	}
	if n := calls(); n != 1 {
		t.Errorf("%d claim inserts, want 1", n)
	}
}
