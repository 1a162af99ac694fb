package mongotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Server kinds returned by [Server.Kind].
const (
	KindURI      = "uri"
	KindDocker   = "docker"
	KindFerretDB = "ferretdb"
)

// Server is a MongoDB-compatible server usable by tests.
type Server struct {
	kind string
	uri  string

	child   *child        // KindFerretDB
	backend string        // KindFerretDB: BackendSQLite or BackendPostgreSQL
	pgURL   string        // BackendPostgreSQL: FerretDB's database
	dir     string        // KindFerretDB temp dir (data/, stderr.log), removed by stop
	docker  *dockerServer // KindDocker
	start   time.Duration // how long resolution took
}

// URI returns the connection string of the server.
func (s *Server) URI() string { return s.uri }

// Kind returns "uri", "docker" or "ferretdb".
func (s *Server) Kind() string { return s.kind }

// Backend returns the embedded FerretDB's backend, [BackendSQLite] or
// [BackendPostgreSQL] (DSYNC_MONGOTEST_BACKEND), or "" for other kinds.
func (s *Server) Backend() string { return s.backend }

// IsFerretDB reports whether the server is the embedded FerretDB, for tests
// that must skip features FerretDB lacks.
func (s *Server) IsFerretDB() bool { return s.kind == KindFerretDB }

func (s *Server) stop() error {
	switch {
	case s.child != nil:
		err := s.child.stop(15 * time.Second)
		_ = os.RemoveAll(s.dir)
		return err
	case s.docker != nil:
		return s.docker.stop()
	}
	return nil
}

var shared struct {
	once sync.Once
	mu   sync.Mutex
	srv  *Server
	err  error
}

// Main is meant for TestMain: func TestMain(m *testing.M) { mongotest.Main(m) }.
// It runs the tests, stops the shared server and exits with the tests' code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is [Main] without os.Exit, so that a TestMain can run goleak (or
// other checks) after the shared server has been stopped.
func Run(m *testing.M) int {
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "mongotest: stopping shared server: %v\n", err)
	}
	stopSharedPostgres()
	return code
}

func stopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		return nil
	}
	err := shared.srv.stop()
	shared.srv = nil
	shared.err = fmt.Errorf("shared server already stopped (mongotest.Run returned)")
	return err
}

// Shared returns the server shared by the whole test binary, starting it on
// first use (see the package doc for the resolution order). It calls
// tb.Fatal if no server can be had; the failure is remembered, so later
// tests fail fast with the same message.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.once.Do(func() {
		srv, err := resolveShared()
		shared.mu.Lock()
		shared.srv, shared.err = srv, err
		shared.mu.Unlock()
	})
	shared.mu.Lock()
	srv, err := shared.srv, shared.err
	shared.mu.Unlock()
	if err != nil {
		tb.Fatalf("mongotest: no MongoDB server available: %v", err)
	}
	return srv
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mongotest: "+format+"\n", args...)
}

func resolveShared() (*Server, error) {
	start := time.Now()

	if uri := os.Getenv("MONGODB_URI"); uri != "" {
		if err := pingURI(uri, 10*time.Second); err != nil {
			return nil, fmt.Errorf("MONGODB_URI is set but the server does not answer: %w", err)
		}
		s := &Server{kind: KindURI, uri: uri, start: time.Since(start)}
		logf("using MONGODB_URI (%s)", redact(uri))
		return s, nil
	}

	d, err := startDocker()
	switch {
	case err == nil:
		s := &Server{kind: KindDocker, uri: d.child.uri, docker: d, start: time.Since(start)}
		logf("using a %s of %s in Docker (dockerserver child pid %d, log %s) at %s, ready in %v",
			d.topology, d.image, d.child.pid(), d.child.logPath, s.uri, s.start.Round(time.Millisecond))
		return s, nil
	case dockerAsked() != "":
		return nil, fmt.Errorf("%s=%s asks for MongoDB in Docker, which cannot be had: %w", envTopology, dockerAsked(), err)
	case err != errNoDocker:
		logf("Docker engine answers but the MongoDB deployment failed, falling back to FerretDB: %v", err)
	}

	backend, err := embeddedBackend()
	if err != nil {
		return nil, err
	}
	pgURL, err := embeddedPostgresDatabase()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "dsync-mongotest-")
	if err != nil {
		return nil, err
	}
	c, err := startChild(filepath.Join(base, "data"), "127.0.0.1:0", pgURL, filepath.Join(base, "stderr.log"))
	if err != nil {
		_ = os.RemoveAll(base)
		return nil, fmt.Errorf("embedded FerretDB: %w", err)
	}
	if err := pingURI(c.uri, 30*time.Second); err != nil {
		c.kill()
		err = fmt.Errorf("embedded FerretDB at %s does not answer: %w; stderr:\n%s", c.uri, err, c.stderr())
		_ = os.RemoveAll(base)
		return nil, err
	}
	s := &Server{kind: KindFerretDB, uri: c.uri, child: c, backend: backend, pgURL: pgURL, dir: base, start: time.Since(start)}
	on := "SQLite, dir " + base
	if pgURL != "" {
		on = "PostgreSQL, database " + pgURL
	}
	logf("using embedded FerretDB v1.24.0 on %s (child pid %d running %s) at %s, ready in %v",
		on, c.pid(), c.cmd.Path, c.uri, s.start.Round(time.Millisecond))
	return s, nil
}

// pingURI connects a throwaway client and pings until timeout.
func pingURI(uri string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(timeout))
	if err != nil {
		return err
	}
	defer disconnect(c)
	return c.Ping(ctx, nil)
}

func disconnect(c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Disconnect(ctx)
}

func redact(uri string) string {
	// mongodb://user:pass@host → mongodb://user:***@host
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@")
	if at < 0 {
		return uri
	}
	userinfo := rest[:at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		userinfo = user + ":***"
	}
	return scheme + "://" + userinfo + rest[at:]
}

// clientURIs remembers which URI each NewClient client was built for, so
// [SameDatabase] can open another client to the same server.
var clientURIs sync.Map // *mongo.Client → string

// NewClient connects a new client to uri (options.Client().ApplyURI(uri),
// then opts merged in order, later wins field by field) and disconnects it
// in tb.Cleanup. It does not ping: the server may legitimately be down in
// fault tests.
func NewClient(tb testing.TB, uri string, opts ...*options.ClientOptions) *mongo.Client {
	tb.Helper()
	all := append([]*options.ClientOptions{options.Client().ApplyURI(uri)}, opts...)
	c, err := mongo.Connect(all...)
	if err != nil {
		tb.Fatalf("mongotest: connect %s: %v", redact(uri), err)
	}
	clientURIs.Store(c, uri)
	tb.Cleanup(func() {
		clientURIs.Delete(c)
		disconnect(c)
	})
	return c
}

// NewDatabase connects a NEW client to [Shared] and returns a database with
// a unique name ([DatabaseName]). The database is dropped, then the client
// disconnected, in tb.Cleanup.
func NewDatabase(tb testing.TB, opts ...*options.ClientOptions) *mongo.Database {
	tb.Helper()
	srv := Shared(tb)
	c := NewClient(tb, srv.URI(), opts...)
	db := c.Database(DatabaseName(tb))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			tb.Logf("mongotest: dropping database %s: %v", db.Name(), err)
		}
	})
	return db
}

// SameDatabase returns the database named like db through a NEW client to
// the same server (db must come from [NewDatabase] or a [NewClient]
// client), to simulate another process. The client is disconnected in
// tb.Cleanup; the database is not dropped by this call.
func SameDatabase(tb testing.TB, db *mongo.Database, opts ...*options.ClientOptions) *mongo.Database {
	tb.Helper()
	v, ok := clientURIs.Load(db.Client())
	if !ok {
		tb.Fatalf("mongotest: SameDatabase: database %s does not come from a mongotest client", db.Name())
	}
	return NewClient(tb, v.(string), opts...).Database(db.Name())
}

var (
	dbSeq    atomic.Uint64
	dbPrefix = func() string {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}()
)

// DatabaseName returns a database name unique to this call, derived from
// tb.Name(): only [a-z0-9_], at most 63 characters, safe for MongoDB and
// FerretDB/SQLite. Unique across test binaries sharing one server too
// (random per-process part plus a counter).
func DatabaseName(tb testing.TB) string {
	var b strings.Builder
	lastUnderscore := false
	for _, r := range strings.ToLower(tb.Name()) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !ok {
			if lastUnderscore {
				continue
			}
			r = '_'
		}
		lastUnderscore = r == '_'
		b.WriteRune(r)
	}
	name := strings.Trim(b.String(), "_")
	name = strings.TrimPrefix(name, "test")
	name = strings.Trim(name, "_")
	const maxName = 40
	if len(name) > maxName {
		name = strings.TrimRight(name[:maxName], "_")
	}
	return fmt.Sprintf("t_%s_%s_%d", name, dbPrefix, dbSeq.Add(1))
}

// Hello runs the hello command on c's admin database (a convenience for
// tests that need server facts, e.g. setName or localTime).
func Hello(ctx context.Context, c *mongo.Client) (bson.M, error) {
	var res bson.M
	err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&res)
	return res, err
}

// MainWithLeakCheck is Main followed by a goroutine leak check: a TestMain
// of a package whose types own goroutines (estimators, keepers, tailers)
// is just
//
//	func TestMain(m *testing.M) { mongotest.MainWithLeakCheck(m) }
//
// It exits non-zero if the tests failed or a goroutine outlived them.
func MainWithLeakCheck(m *testing.M) {
	code := Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
