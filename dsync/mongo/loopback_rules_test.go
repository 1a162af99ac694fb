package dsyncmongo

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/ferretdb"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// What else decides whether a store counts as reached over loopback:
// FerretDB's backend, and servers that do not answer.

// preparedStore is a store on a new database of the test server, with
// the options given, prepared; it logs to log if not nil.
func preparedStore(t *testing.T, log *logRecords, opts ...Option) *Store {
	t.Helper()
	var h slog.Handler = slog.DiscardHandler
	if log != nil {
		h = log
	}
	st, err := NewStore(mongotest.NewDatabase(t), append([]Option{WithLogger(slog.New(h))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Prepare(testCtx(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLoopbackFerretDBBackend: the embedded FerretDB on loopback counts
// as loopback on SQLite (its data is that one process's), and not on
// PostgreSQL, whose data FerretDB processes on other machines may
// share. Run with DSYNC_MONGOTEST_BACKEND=postgresql for the second.
func TestLoopbackFerretDBBackend(t *testing.T) {
	onLoopback(t)
	srv := mongotest.Shared(t)
	var want bool
	switch srv.Backend() {
	case mongotest.BackendSQLite:
		want = true
	case mongotest.BackendPostgreSQL:
		want = false
	default:
		t.Skipf("the test server is %s, not the embedded FerretDB", srv.Kind())
	}
	if got := preparedStore(t, nil).Roles().Loopback.Loopback(testCtx(t, time.Minute)); got != want {
		t.Errorf("FerretDB on %s on loopback: Loopback() = %v, want %v", srv.Backend(), got, want)
	}
}

// TestFerretDBBackendOfAnswers: the release of FerretDB buildInfo names,
// and the backend explain's plan names.
func TestFerretDBBackendOfAnswers(t *testing.T) {
	doc := func(d bson.D) bson.Raw {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for _, c := range []struct {
		buildInfo bson.D
		want      int
	}{
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdbVersion", Value: "v1.24.0"}}, 1},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdbVersion", Value: "v2.1.0"}}, 2},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.3.0"}}}}, 2},
		{bson.D{{Key: "version", Value: "8.0.4"}}, 0},
	} {
		if got, _ := ferretdb.Release(doc(c.buildInfo)); got != c.want {
			t.Errorf("ferretdb.Release(%v) = %d, want %d", c.buildInfo, got, c.want)
		}
	}
	for _, c := range []struct {
		planner bson.Raw
		want    ferretDBBackend
	}{
		{doc(bson.D{{Key: "Plan", Value: bson.D{{Key: "Node Type", Value: "Seq Scan"}}}}), backendPostgreSQL},
		{doc(bson.D{{Key: "Plan", Value: bson.A{"SEARCH dsync_locks_1234 USING INDEX"}}}), backendSQLite},
		{doc(bson.D{}), backendUnknown},
		{doc(bson.D{{Key: "winningPlan", Value: bson.D{{Key: "stage", Value: "IDHACK"}}}}), backendUnknown},
		{nil, backendUnknown},
	} {
		if got := planBackend(c.planner); got != c.want {
			t.Errorf("planBackend(%v) = %v, want %v", c.planner, got, c.want)
		}
	}
}

// TestLoopbackUnanswered: a store whose server does not answer what
// tells whether it is reached over loopback (whatsmyuri; hello, on a
// replica set; explain, on FerretDB 1, or a plan that names no backend)
// counts as not reached over loopback, and says so at Info, once.
func TestLoopbackUnanswered(t *testing.T) {
	onLoopback(t)
	if !preparedStore(t, nil).Roles().Loopback.Loopback(testCtx(t, time.Minute)) {
		t.Skip("the test server does not count as loopback: nothing to take away")
	}
	replicas := topologyReplicas
	asReplicaSet := func(c *config) error { c.tests().topology = &replicas; return nil }
	refused := errors.New("refused")
	type unanswered struct {
		name string
		opts []Option
		cmd  string // the command the Info line names
	}
	cases := []unanswered{
		{"whatsmyuri fails", []Option{withFault(faultOn("whatsmyuri", refused))}, "whatsmyuri"},
		{"hello fails on a replica set", []Option{asReplicaSet, withFault(faultOn("hello", refused))}, "hello"},
	}
	if mongotest.Shared(t).IsFerretDB() {
		cases = append(cases,
			unanswered{"explain fails on FerretDB", []Option{withFault(faultOn("explain", refused))}, "explain"},
			unanswered{"no plan on FerretDB (no lock collection)", []Option{WithIndexManagement(false)}, "explain"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log logRecords
			if preparedStore(t, &log, c.opts...).Roles().Loopback.Loopback(testCtx(t, time.Minute)) {
				t.Error("the store reports loopback")
			}
			var infos []string
			log.mu.Lock()
			for _, r := range log.recs {
				if r.Level == slog.LevelInfo && r.Message != "dsyncmongo: where this process keeps its locks" {
					infos = append(infos, r.Message)
					r.Attrs(func(a slog.Attr) bool {
						if a.Key == "command" && a.Value.String() != c.cmd {
							t.Errorf("the Info line names the command %q, want %q", a.Value, c.cmd)
						}
						return true
					})
				}
			}
			log.mu.Unlock()
			if len(infos) != 1 {
				t.Errorf("logged at Info: %q; want one line that names %q", infos, c.cmd)
			}
		})
	}
}
