package dsyncmongo

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// findings indexes Doctor's findings by check.
func findings(t *testing.T, fs []Finding) map[string]Finding {
	t.Helper()
	m := map[string]Finding{}
	for _, f := range fs {
		if _, dup := m[f.Check]; dup {
			t.Errorf("check %q reported twice", f.Check)
		}
		if f.Status != Pass && f.Fix == "" && f.Check != "wake-ups" {
			t.Errorf("check %q: %s without a fix: %q", f.Check, f.Status, f.Found)
		}
		m[f.Check] = f
	}
	return m
}

// On the test server: every check runs, nothing fails, and what it
// finds is true of the server.
func TestDoctorOnTheTestServer(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	fs, err := Doctor(ctx, db, DoctorConfig{TTL: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := findings(t, fs)
	for _, check := range []string{"server", "write concern", "wake-ups", "lock index", "sharding", "privileges", "clock", "failover"} {
		f, ok := got[check]
		if !ok {
			t.Errorf("no %q finding in %+v", check, fs)
			continue
		}
		if f.Status == Fail {
			t.Errorf("%s: fail: %s", check, f.Found)
		}
	}
	ferret := mongotest.Shared(t).IsFerretDB()
	if s := got["server"]; ferret && (s.Status != Warn || !strings.Contains(s.Found, "FerretDB")) {
		t.Errorf("server on FerretDB: %+v", s)
	}
	if w := got["wake-ups"]; w.Status != Pass {
		t.Errorf("wake-ups: %+v", w)
	}
	if ix := got["lock index"]; !strings.Contains(ix.Found, "does not exist yet") {
		t.Errorf("lock index before any lock: %+v", ix)
	}
	// The scratch collections are gone.
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.Contains(n, "_doctor") {
			t.Errorf("scratch collection %q left behind", n)
		}
	}

	// Once a lock ran, the index is there.
	b := newBackend(t, db)
	m, _ := dsync.NewMutex(b.Client, "k")
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	fs, err = Doctor(ctx, db, DoctorConfig{TTL: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ix := findings(t, fs)["lock index"]; ix.Status != Pass || !strings.Contains(ix.Found, lockIndexName) {
		t.Errorf("lock index after a lock: %+v", ix)
	}
}

// Through the fault proxy, with every reply held back 300 ms: the
// wake-up latency is reported as slow.
func TestDoctorReportsASlowServer(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(mongotest.Shared(t).URI())
	if err != nil {
		t.Fatal(err)
	}
	px, err := faultproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	u.Host = px.Addr()
	q := u.Query()
	q.Set("directConnection", "true")
	u.RawQuery = q.Encode()
	client := mongotest.NewClient(t, u.String())
	db := client.Database(mongotest.DatabaseName(t))
	ctx := testCtx(t, time.Minute)
	if err := db.Client().Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	px.SetDelay(faultproxy.Down, 300*time.Millisecond)
	fs, err := Doctor(ctx, db, DoctorConfig{TTL: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if w := findings(t, fs)["wake-ups"]; w.Status != Warn || !strings.Contains(w.Found, "to reach a waiting cursor") {
		t.Errorf("wake-ups through a slow link: %+v", w)
	}
}

func TestDoctorRejectsBadInput(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	if _, err := Doctor(ctx, nil, DoctorConfig{TTL: 15 * time.Second}); err == nil {
		t.Error("nil database accepted")
	}
	db := offlineDB(t)
	for _, dc := range []DoctorConfig{
		{TTL: -time.Second},
		{TTL: 10 * time.Second, RenewInterval: 10 * time.Second},
	} {
		if _, err := Doctor(ctx, db, dc); err == nil {
			t.Errorf("%+v accepted", dc)
		}
	}
}

// What only other deployments show, from their hello and buildInfo
// replies.
func TestDoctorReadsDeployments(t *testing.T) {
	doc := func(d bson.D) bson.Raw {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rs := readDeployment(doc(bson.D{{Key: "setName", Value: "rs0"}, {Key: "hosts", Value: bson.A{"a:1", "b:1", "c:1"}}}))
	if rs.kind != "replica set" || rs.setName != "rs0" || rs.members != 3 {
		t.Errorf("replica set read as %+v", rs)
	}
	if k := readDeployment(doc(bson.D{{Key: "msg", Value: "isdbgrid"}})).kind; k != "mongos" {
		t.Errorf("mongos read as %q", k)
	}
	if k := readDeployment(doc(bson.D{{Key: "isWritablePrimary", Value: true}})).kind; k != "standalone" {
		t.Errorf("standalone read as %q", k)
	}
	mongo7 := doc(bson.D{{Key: "version", Value: "7.0.4"}})
	for _, tc := range []struct {
		dep    deployment
		build  bson.Raw
		berr   error
		status Status
		want   string
	}{
		{rs, mongo7, nil, Pass, `MongoDB 7.0.4, replica set "rs0" of 3 members`},
		{deployment{kind: "mongos"}, mongo7, nil, Pass, "sharded cluster"},
		{deployment{kind: "standalone"}, mongo7, nil, Warn, "no failover"},
		{deployment{kind: "standalone"}, doc(bson.D{{Key: "version", Value: "7.0.42"}, {Key: "ferretdbVersion", Value: "v1.24.0"}}), nil, Warn, "FerretDB v1.24.0"},
		{deployment{kind: "standalone"}, doc(bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.5.0"}}}}), nil, Warn, "FerretDB v2.5.0, reporting MongoDB 7.0.77"},
		{deployment{kind: "standalone"}, doc(bson.D{{Key: "version", Value: "7.0.42"}, {Key: "ferretdbVersion", Value: "unknown"}}), nil, Warn, "FerretDB of unknown version"},
		{rs, nil, mongo.CommandError{Code: 323, Name: "APIStrictError"}, Warn, "version unknown"},
	} {
		f := serverFinding(tc.dep, tc.build, tc.berr)
		if f.Status != tc.status || !strings.Contains(f.Found, tc.want) {
			t.Errorf("%+v: %s %q, want %s with %q", tc.dep, f.Status, f.Found, tc.status, tc.want)
		}
	}
}

func TestDoctorJudgesFailover(t *testing.T) {
	if defaultOutageGrace != dsync.DefaultOutageGrace {
		t.Fatalf("the doctor's default outage grace %v, dsync's %v", defaultOutageGrace, dsync.DefaultOutageGrace)
	}
	for _, tc := range []struct {
		timeout           time.Duration
		ttl, renew, grace time.Duration
		status            Status
		want              string
	}{
		// The defaults: 15 s TTL, renewed every 5 s, leaves 9.25 s; an
		// election takes about 12 s; the default grace, 30 s, covers it.
		{10 * time.Second, 15 * time.Second, 5 * time.Second, dsync.DefaultOutageGrace, Pass, "outage grace of 30s"},
		{10 * time.Second, 15 * time.Second, 5 * time.Second, 0, Warn, "at least 20s"},
		{10 * time.Second, 15 * time.Second, 5 * time.Second, 5 * time.Second, Warn, "outage grace of at least 12s"},
		{30 * time.Second, 15 * time.Second, 5 * time.Second, dsync.DefaultOutageGrace, Warn, "outage grace of at least 32s"},
		{10 * time.Second, 20 * time.Second, 20 * time.Second / 3, 0, Pass, "ride through"},
		{5 * time.Second, 15 * time.Second, 5 * time.Second, 0, Pass, "ride through"},
		{10 * time.Second, 30 * time.Second, 10 * time.Second, 0, Pass, "ride through"},
	} {
		f := failoverFinding(tc.timeout, true, tc.ttl, tc.renew, tc.grace)
		if f.Status != tc.status || !strings.Contains(f.Found+f.Fix, tc.want) {
			t.Errorf("election timeout %v, TTL %v, renew %v, grace %v: %s %q %q, want %s with %q", tc.timeout, tc.ttl, tc.renew, tc.grace, f.Status, f.Found, f.Fix, tc.status, tc.want)
		}
	}
	if f := failoverFinding(defaultElectionTimeout, false, dsync.DefaultTTL, dsync.DefaultTTL/3, 0); !strings.Contains(f.Found, "default electionTimeoutMillis") {
		t.Errorf("an unknown timeout is not said to be the default: %q", f.Found)
	}
}
