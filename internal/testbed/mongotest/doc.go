// Package mongotest hands tests a MongoDB-compatible server, whatever the
// machine has. It is TEST-ONLY: import it from _test.go files only; library
// code must never import it. It links in neither FerretDB nor a Docker
// client: each runs in a child process built from a module of its own
// (steps 2 and 3), so that the library module requires neither.
//
// # Resolution order
//
// The first call to [Shared] in a test binary resolves one server for the whole
// binary, logs the choice once on stderr ("mongotest: using ...") and reuses it:
//
//  1. MONGODB_URI, if set: a real MongoDB (what users run in production).
//     It must answer a ping within 10 s or [Shared] fails; there is no
//     fallback when a URI was given explicitly. Kind "uri".
//  2. MongoDB in Docker, when a Docker engine (DOCKER_HOST, default the
//     local socket) answers a ping within 1.5 s. The harness builds the
//     command dockerserver of the module
//     github.com/go-dsync/dsync/internal/testbed/dockerserve (which drives
//     Docker through github.com/ory/dockertest/v3) as it builds ferretserver
//     below, or runs DSYNC_MONGOTEST_DOCKERSERVER, and keeps it as a child
//     until [Run]: the child starts the deployment, prints its URI once
//     the primary is writable, and removes the containers and their
//     network when it is stopped (its containers stop themselves after an
//     hour anyway). DSYNC_MONGOTEST_TOPOLOGY chooses the deployment:
//     single (the default: a one-member replica set), replset (three
//     members; the URI names the primary with directConnection=true, since
//     the members' names resolve only on their network) or sharded (two
//     one-member shards, a config server and a mongos, which the URI
//     names). DSYNC_MONGOTEST_MONGO_VERSION is the official mongo image's
//     tag (default 7.0); DSYNC_MONGOTEST_MONGO_IMAGE an image to run
//     instead. The child's progress goes to a log file the harness names.
//     Set DSYNC_MONGOTEST_DOCKER=0 to skip this step. Without an engine
//     the harness goes on to step 3 at once, building nothing; when the
//     engine answers but the deployment fails it says why and goes on to
//     step 3, unless DSYNC_MONGOTEST_TOPOLOGY is set: a topology asked for
//     by name gets no fallback, so that a run meant for a sharded cluster
//     never passes on FerretDB. Kind "docker".
//  3. Otherwise an embedded FerretDB v1.24.0 (SQLite handler, data in a temp
//     dir, random loopback port) running in a CHILD PROCESS: the command
//     ferretserver of the module
//     github.com/go-dsync/dsync/internal/ferretserve (directory
//     internal/ferretserve of this repository, found next to the
//     go.work or go.mod of the test's directory). FerretDB is not in
//     the library module's go.mod, so the harness builds that command
//     with `go build` (GOWORK=off, never with -race) into a directory of
//     the user's cache directory (dsync-mongotest/<hash of the
//     checkout's path>) shared by the checkout's test binaries: go build
//     links it only when its sources changed, so the first test binary
//     pays the link and the others find it up to date. It says so on
//     stderr. The directory is a cache, safe to delete. Set
//     DSYNC_MONGOTEST_FERRETSERVER to a ready-built ferretserver to skip
//     the build. If the module cannot be found or built, [Shared] fails
//     with the reason. The child prints its URI on stdout when listening
//     and exits on SIGTERM or when its stdin closes (Pdeathsig SIGKILL on
//     Linux too). Its stderr goes to a file next to the data and is quoted
//     when startup fails. The test process holds no goroutine for it, so
//     goleak checks (even per test) stay clean. Startup takes ~20 ms after
//     the build. Kind "ferretdb".
//
// With DSYNC_MONGOTEST_BACKEND=postgresql, step 3's FerretDB runs its
// PostgreSQL backend instead of SQLite ([Server.Backend] says which),
// over a PostgreSQL the harness starts once per test binary and stops in
// [Run]: a cluster made by initdb in a temp dir (os.TempDir()/
// dsync-mongotest-pg-*, fsync off), listening on a free 127.0.0.1 port.
// Its programs are found by the initdb on PATH, `pg_config --bindir`, or
// Debian's /usr/lib/postgresql/*/bin (Debian: apt-get install
// postgresql). initdb and postgres refuse to run as root, so as root the
// harness runs them as the postgres user (or nobody). The shared server
// and each [StartProcess] keep their data in a database of their own
// there; a FerretDB process killed or restarted leaves it in place.
// [StartFrontEnd] starts a second FerretDB process over the shared
// server's database, as people run several front ends.
// PostgreSQL gets SIGQUIT if the test binary dies (Linux). Starting it
// takes a few seconds. Its log is postgres.log in its temp dir.
//
// To force a real server:
//
//	MONGODB_URI='mongodb://localhost:27017/?directConnection=true' go test work
//	DSYNC_MONGOTEST_TOPOLOGY=sharded DSYNC_MONGOTEST_MONGO_VERSION=8.0 go test work
//
// To run on FerretDB with PostgreSQL:
//
//	DSYNC_MONGOTEST_BACKEND=postgresql go test ./dsync/mongo ./integration
//
// # Using it
//
// Every test package that uses the harness should have
//
//	func TestMain(m *testing.M) { mongotest.Main(m) }
//
// or, to add a leak check after the shared server is stopped:
//
//	func TestMain(m *testing.M) {
//		code := mongotest.Run(m)
//		if code == 0 {
//			if err := goleak.Find(); err != nil { ... code = 1 }
//		}
//		os.Exit(code)
//	}
//
// Without it tests still work, but the shared child server only goes away
// when the test binary exits (stdin EOF / Pdeathsig), and its temp dir
// (os.TempDir()/dsync-mongotest-*) is left behind.
//
// [NewDatabase] gives a test a fresh database (unique name, dropped at
// cleanup) through a new client; [SameDatabase] opens the same database
// through yet another client, to simulate several processes. [StartProcess]
// gives fault tests their own FerretDB process that can be killed and
// restarted on the same data dir and port, or paused and resumed
// (SIGSTOP, SIGCONT; Unix only) to cut every client off at once and give
// the store back with its data.
//
// # FerretDB notes (v1.24.0, SQLite handler)
//
// The Go driver works with default client options; nothing needs setting.
// FerretDB's hello reports a standalone (no setName) with
// logicalSessionTimeoutMinutes, so the driver sends lsid but never
// txnNumber: retryable writes are silently off. writeConcern of any value
// (w:"majority", even w:5) is accepted and ignored. endSessions (sent by
// Client.Disconnect) answers CommandNotFound "no such command:
// 'endSessions'"; the driver ignores it. FerretDB would log each such failed
// command at WARN, so the child logs at ERROR only; set
// DSYNC_MONGOTEST_LOG=debug|info|warn to send its log, at that level, to
// the test's stderr. Transactions fail (insert: unknown field
// "startTransaction"; abortTransaction: no such command). Unique indexes
// work and report duplicate keys (mongo.IsDuplicateKeyError), also for a
// conflicting upsert. A graceful stop waits up to 3 s for connected clients
// before closing them. It also lacks pipeline updates, $$NOW, $expr
// comparisons, TTL indexes and change streams (dsync/mongo's package
// documentation says what the protocol uses instead).
// Database names must match [a-zA-Z0-9_-]{1,63}; [DatabaseName] produces
// such names. [Server.IsFerretDB] lets a test skip what FerretDB lacks.
package mongotest
