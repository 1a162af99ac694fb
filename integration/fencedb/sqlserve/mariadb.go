package sqlserve

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/serverproc"
)

// mariaDB is a MariaDB server the harness started: a data directory made
// by mariadb-install-db in a temporary directory, served by mariadbd on a
// loopback port. root logs in from loopback without a password.
type mariaDB struct {
	proc *serverproc.Proc
	dir  string
	port int

	mu    sync.Mutex
	dbSeq int
}

// mariaDBBins finds mariadbd and mariadb-install-db: on PATH, else where
// Debian's mariadb-server puts them.
func mariaDBBins() (server, install string, err error) {
	find := func(name, debian string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		if _, err := os.Stat(debian); err == nil {
			return debian
		}
		return ""
	}
	server = find("mariadbd", "/usr/sbin/mariadbd")
	install = find("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if server == "" || install == "" {
		return "", "", errors.New("MariaDB's mariadbd and mariadb-install-db not found (on PATH or in /usr/sbin, /usr/bin); install MariaDB (Debian: apt-get install mariadb-server)")
	}
	return server, install, nil
}

// startMariaDB makes a data directory and starts mariadbd on it, and
// waits until it accepts connections. The server is for tests: InnoDB
// does not flush its log at each commit, and there is no binary log.
func startMariaDB() (*mariaDB, error) {
	start := time.Now()
	server, install, err := mariaDBBins()
	if err != nil {
		return nil, err
	}
	// mariadbd refuses to run as root unless told whom to run as; it is
	// started as that user rather than told (--user), since it would
	// change its credentials itself, and the kernel then forgets the
	// signal it was to get when the test binary dies.
	cred, err := serverproc.Credential("mysql")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no mysql user to run MariaDB as: %w", err)
	}
	var runAs []string // for mariadb-install-db
	if cred != nil {
		runAs = []string{"--user=mysql"}
	}
	dir, err := serverproc.MkdirTemp("dsync-fencedb-mariadb-", cred)
	if err != nil {
		return nil, err
	}
	m := &mariaDB{dir: dir}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(install, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, runAs...)...)
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb-install-db: %v:\n%s", err, out)
	}
	// The port is picked free, then given to mariadbd: another process
	// may take it in between, so a start that fails is tried on another.
	for try := 0; ; try++ {
		if err = m.launch(server, data, cred); err == nil {
			break
		}
		if try == 2 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	logf("started MariaDB (%s, pid %d, dir %s) on 127.0.0.1:%d in %v",
		server, m.proc.Pid(), dir, m.port, time.Since(start).Round(time.Millisecond))
	return m, nil
}

func (m *mariaDB) logPath() string { return filepath.Join(m.dir, "mariadb.log") }

// launch starts mariadbd on a free port and waits until it is ready.
func (m *mariaDB) launch(server, data string, cred *syscall.Credential) error {
	port, err := serverproc.FreePort()
	if err != nil {
		return err
	}
	args := []string{"--no-defaults", "--datadir=" + data,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(m.dir, "mariadb.sock"),
		"--pid-file=" + filepath.Join(m.dir, "mariadb.pid"),
		"--log-error=" + m.logPath(),
		"--skip-log-bin",
		"--innodb-flush-log-at-trx-commit=0", // a test server: nothing to keep across a crash
		"--innodb-buffer-pool-size=64M",
		"--max-connections=500",
	}
	cmd := exec.Command(server, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	serverproc.SetPdeathsig(cmd, syscall.SIGKILL) // the server dies with the test binary
	proc, err := serverproc.Start(cmd)
	if err != nil {
		return fmt.Errorf("start mariadbd: %w", err)
	}
	m.proc, m.port = proc, port
	db, err := sql.Open("mysql", m.dsn(""))
	if err != nil {
		proc.Kill()
		return err
	}
	defer db.Close()
	return proc.AwaitReady("mariadbd", m.logPath(), 60*time.Second, func() bool { return db.Ping() == nil })
}

// dsn is the driver's connection string for database db ("" for none).
func (m *mariaDB) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?timeout=10s", m.port, db)
}

// newDatabase creates a new database and opens it.
func (m *mariaDB) newDatabase() (*sql.DB, error) {
	m.mu.Lock()
	m.dbSeq++
	name := fmt.Sprintf("fence_%d", m.dbSeq)
	m.mu.Unlock()
	admin, err := sql.Open("mysql", m.dsn(""))
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		return nil, err
	}
	return sql.Open("mysql", m.dsn(name))
}

// stop kills mariadbd (nothing in it is kept) and removes its directory.
func (m *mariaDB) stop() {
	m.proc.Kill()
	_ = os.RemoveAll(m.dir)
}
