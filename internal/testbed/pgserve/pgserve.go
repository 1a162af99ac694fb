//go:build unix

package pgserve

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/serverproc"
)

// User is the PostgreSQL superuser a cluster is made with; it logs in
// without a password, and only from loopback.
const User = "dsync"

// A Server is a PostgreSQL server started by Start: a cluster in a
// temporary directory, on a loopback port, run as a child process.
type Server struct {
	proc    *serverproc.Proc // nil before the first launch
	dir     string           // removed by Stop
	bin     string           // directory of initdb, postgres and psql
	port    int
	version string // "15.18", from postgres --version

	maxConns int

	mu    sync.Mutex
	dbSeq int
}

// Options configure Start.
type Options struct {
	// DirPrefix is the prefix of the cluster's temporary directory's name.
	DirPrefix string
	// MaxConnections is the server's max_connections; 0 leaves
	// PostgreSQL's default (100).
	MaxConnections int
	// Logf, if not nil, is told of the start.
	Logf func(format string, args ...any)
}

// BinDir finds PostgreSQL's server programs: the directory of the
// initdb on PATH, else `pg_config --bindir`, else the newest of Debian's
// /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(debian, func(i, j int) bool { return pgMajor(debian[i]) > pgMajor(debian[j]) })
	dirs = append(dirs, debian...)
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) && fileExists(filepath.Join(d, "postgres")) && fileExists(filepath.Join(d, "psql")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's initdb, postgres and psql not found (on PATH, by pg_config --bindir, or in /usr/lib/postgresql/*/bin); install PostgreSQL (Debian: apt-get install postgresql)")
}

// pgMajor reads the major version in /usr/lib/postgresql/<major>/bin.
func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// serverCredential returns whom PostgreSQL runs as: initdb and postgres
// refuse to run as root, so as root the harness runs them as the postgres
// user (Debian's package makes one) or else nobody; otherwise as the
// current user (nil).
func serverCredential() (*syscall.Credential, error) {
	cred, err := serverproc.Credential("postgres", "nobody")
	if err != nil {
		return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as (initdb refuses root)")
	}
	return cred, nil
}

// Start makes a cluster in a new temporary directory and starts
// PostgreSQL on it, listening on 127.0.0.1 only, and waits until it
// accepts connections. The cluster is for tests: it skips fsync. The
// caller calls Stop.
func Start(o Options) (*Server, error) {
	start := time.Now()
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := serverproc.MkdirTemp(o.DirPrefix, cred)
	if err != nil {
		return nil, err
	}
	p := &Server{dir: dir, bin: bin, maxConns: o.MaxConnections}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", p.dataDir(), "-U", User, "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v:\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) >= 3 { // postgres (PostgreSQL) 15.18 ...
			p.version = f[2]
		}
	}
	// The port is picked free, then given to postgres: another process
	// may take it in between, so a start that fails is tried on another.
	for try := 0; ; try++ {
		err = p.launch(cred)
		if err == nil {
			break
		}
		if try == 2 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if o.Logf != nil {
		o.Logf("started PostgreSQL %s (%s, pid %d, dir %s) on 127.0.0.1:%d in %v",
			p.version, bin, p.proc.Pid(), dir, p.port, time.Since(start).Round(time.Millisecond))
	}
	return p, nil
}

func (p *Server) dataDir() string { return filepath.Join(p.dir, "data") }
func (p *Server) logPath() string { return filepath.Join(p.dir, "postgres.log") }

// launch starts postgres on a free port and waits until it is ready.
func (p *Server) launch(cred *syscall.Credential) error {
	port, err := serverproc.FreePort()
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	if cred != nil {
		_ = lf.Chown(int(cred.Uid), int(cred.Gid))
	}
	args := []string{"-D", p.dataDir(), "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=off", // a test cluster: nothing to keep across a machine crash
	}
	if p.maxConns > 0 {
		args = append(args, "-c", "max_connections="+strconv.Itoa(p.maxConns))
	}
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGQUIT, PostgreSQL's immediate shutdown (it ends its sessions and
	// frees its shared memory), when the test binary dies.
	serverproc.SetPdeathsig(cmd, syscall.SIGQUIT)
	proc, err := serverproc.Start(cmd)
	lf.Close()
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	p.proc, p.port = proc, port
	return proc.AwaitReady("postgres", p.logPath(), 60*time.Second, func() bool {
		return p.Exec("postgres", "SELECT 1") == nil
	})
}

// Exec runs one SQL command in database db, through psql.
func (p *Server) Exec(db, sql string) error {
	_, err := p.Query(db, sql)
	return err
}

// Query runs one SQL command in database db, through psql, and returns
// what it printed, unaligned and without headers.
func (p *Server) Query(db, sql string) (string, error) {
	cmd := p.psql(db, "-c", sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %v: %s", sql, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// psql is a psql command on database db that prints unaligned, without
// headers, and stops at the first error; args follow.
func (p *Server) psql(db string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, "psql"), append([]string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", User, "-d", db}, args...)...)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	return cmd
}

// NewDatabase creates a new database, named prefix_N, and returns its
// name.
func (p *Server) NewDatabase(prefix string) (string, error) {
	p.mu.Lock()
	p.dbSeq++
	name := fmt.Sprintf("%s_%d", prefix, p.dbSeq)
	p.mu.Unlock()
	if err := p.Exec("postgres", "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return name, nil
}

// URL is the connection URL of database db.
func (p *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s", User, p.port, db)
}

// Port is the server's loopback port; Version its version ("15.18").
func (p *Server) Port() int       { return p.port }
func (p *Server) Version() string { return p.version }

// Stop shuts PostgreSQL down (fast shutdown: sessions are ended), killing
// it after 15 s, and removes its directory.
func (p *Server) Stop() {
	if p.proc != nil {
		p.proc.Stop(syscall.SIGINT, 15*time.Second)
	}
	_ = os.RemoveAll(p.dir)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
