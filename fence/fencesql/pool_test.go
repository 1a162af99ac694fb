package fencesql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-dsync/dsync/fence"
)

// TestResultsReadBeforeTheConnectionIsBack: every statement result that
// Marks and Check read, they read while they still hold the connection it
// came from. A database/sql Result locks its connection when read; once
// the pool has taken the connection back, another caller may hold it,
// and an Admit of the same key holds it while it waits for the key's turn
// (GET_LOCK, pg_advisory_xact_lock). An Admit that read its raise's
// result then waited for that Admit, which waited for it: both stood
// until the waiter's context ended (so one HTTP conformance trial in CI
// hung for the whole of its three-minute bound).
//
// The driver here needs no server: it answers the statements Marks and
// Check send, and marks a connection as back in the pool when
// database/sql validates it on the way in (driver.Validator), which
// database/sql does before it hands the connection to anyone else.
func TestResultsReadBeforeTheConnectionIsBack(t *testing.T) {
	ctx := context.Background()
	for _, d := range []Dialect{PostgreSQL, MySQL, SQLite} {
		t.Run(d.String(), func(t *testing.T) {
			drv := &poolDriver{marks: make(map[string]int64), admits: make(map[string]int64)}
			db := sql.OpenDB(drv)
			defer db.Close()
			f, _ := New(d)
			m, err := f.Marks(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, token := range []uint64{5, 7} {
				release, err := m.Admit(ctx, "k", token)
				if err != nil {
					t.Fatalf("Admit(%d): %v", token, err)
				}
				release()
			}
			if _, err := m.Admit(ctx, "k", 6); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("Admit under a stale token: %v, want fence.ErrStale", err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Check(ctx, tx, "k", 8); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if drv.results.Load() == 0 {
				t.Fatal("no statement result was read: the driver saw none of the statements")
			}
			if late := drv.lateReads(); len(late) > 0 {
				t.Errorf("results read after database/sql took their connection back:\n%s", strings.Join(late, "\n"))
			}
		})
	}
}

// poolDriver answers the statements of Marks and Check without a server:
// one mark per key, and every lock granted at once.
type poolDriver struct {
	results atomic.Int64 // results read

	mu     sync.Mutex
	marks  map[string]int64
	admits map[string]int64 // the admission that holds each key's row
	late   []string
}

func (d *poolDriver) Connect(context.Context) (driver.Conn, error) { return &poolConn{d: d}, nil }
func (d *poolDriver) Driver() driver.Driver                        { return d }
func (d *poolDriver) Open(string) (driver.Conn, error)             { return &poolConn{d: d}, nil }

func (d *poolDriver) lateReads() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.late...)
}

// poolConn is a connection; pooled is set while database/sql keeps it in
// its pool.
type poolConn struct {
	d      *poolDriver
	pooled atomic.Bool
}

var _ interface {
	driver.ExecerContext
	driver.QueryerContext
	driver.ConnBeginTx
	driver.Validator
	driver.SessionResetter
} = (*poolConn)(nil)

// IsValid is called when the connection goes back to the pool.
func (c *poolConn) IsValid() bool { c.pooled.Store(true); return true }

// ResetSession is called when the pool hands the connection out again.
func (c *poolConn) ResetSession(context.Context) error { c.pooled.Store(false); return nil }

func (c *poolConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("no prepare") }
func (c *poolConn) Close() error                        { return nil }
func (c *poolConn) Begin() (driver.Tx, error)           { return c, nil }
func (c *poolConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return c, nil
}
func (c *poolConn) Commit() error   { return nil }
func (c *poolConn) Rollback() error { return nil }

var (
	mysqlRaise = regexp.MustCompile(`VALUES \(X'([0-9a-f]*)', (\d+)\)`)
	mysqlKey   = regexp.MustCompile(`fence_key = X'([0-9a-f]*)'`)
	claimKey   = regexp.MustCompile(`VALUES \((?:X'([0-9a-f]*)'|\$1|\?), (\d+),`)
)

// keyOf is the key a statement names: a hex literal (MySQL) that re
// finds, or its first argument.
func keyOf(re *regexp.Regexp, query string, args []driver.NamedValue) string {
	if m := re.FindStringSubmatch(query); m != nil && m[1] != "" {
		k, _ := hex.DecodeString(m[1])
		return string(k)
	}
	return string(args[0].Value.([]byte))
}

// admitStatement answers the statements of Marks' admissions table and
// of the transactions Marks begins and ends itself: every claim is
// granted.
func (c *poolConn) admitStatement(query string, args []driver.NamedValue) bool {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	switch {
	case strings.HasPrefix(query, "INSERT INTO dsync_fence_admit"):
		m := claimKey.FindStringSubmatch(query)
		id, _ := strconv.ParseInt(m[2], 10, 64)
		c.d.admits[keyOf(claimKey, query, args)] = id
	case strings.HasPrefix(query, "DELETE FROM dsync_fence_admit"):
		delete(c.d.admits, keyOf(mysqlKey, query, args))
	case strings.HasPrefix(query, "UPDATE dsync_fence_admit"),
		strings.HasPrefix(query, "BEGIN"), strings.HasPrefix(query, "START TRANSACTION"),
		strings.HasPrefix(query, "SET TRANSACTION"), query == "COMMIT", query == "ROLLBACK":
	default:
		return false
	}
	return true
}

func (c *poolConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.admitStatement(query, args) {
		return poolResult{c: c}, nil
	}
	switch {
	case strings.HasPrefix(query, "INSERT INTO"):
		var key string
		var token int64
		if m := mysqlRaise.FindStringSubmatch(query); m != nil {
			k, _ := hex.DecodeString(m[1])
			key = string(k)
			token, _ = strconv.ParseInt(m[2], 10, 64)
		} else {
			key, token = string(args[0].Value.([]byte)), args[1].Value.(int64)
		}
		c.d.mu.Lock()
		defer c.d.mu.Unlock()
		mark, had := c.d.marks[key]
		r := poolResult{c: c}
		switch {
		case !had:
			r.affected = 1
		case token >= mark:
			r.affected, r.id = 1, token
		default:
			r.id = mark
		}
		c.d.marks[key] = max(mark, token)
		return r, nil
	case strings.HasPrefix(query, "SELECT pg_advisory_xact_lock"), strings.HasPrefix(query, "DO RELEASE_LOCK"):
		return poolResult{c: c}, nil
	}
	return nil, fmt.Errorf("poolDriver: no statement %q", query)
}

func (c *poolConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	switch {
	case strings.HasPrefix(query, "SELECT GET_LOCK"):
		return &poolRows{v: []int64{1}}, nil
	case strings.HasPrefix(query, "SELECT admission"):
		c.d.mu.Lock()
		defer c.d.mu.Unlock()
		return &poolRows{v: []int64{c.d.admits[keyOf(mysqlKey, query, args)], 30000}}, nil
	case strings.HasPrefix(query, "SELECT mark"), strings.HasPrefix(query, "UPDATE"):
		key := ""
		if m := mysqlKey.FindStringSubmatch(query); m != nil {
			k, _ := hex.DecodeString(m[1])
			key = string(k)
		} else {
			key = string(args[0].Value.([]byte))
		}
		c.d.mu.Lock()
		defer c.d.mu.Unlock()
		return &poolRows{v: []int64{c.d.marks[key]}}, nil
	}
	return nil, fmt.Errorf("poolDriver: no query %q", query)
}

// poolResult records a read made while its connection is in the pool.
type poolResult struct {
	c            *poolConn
	affected, id int64
}

func (r poolResult) read(what string) {
	r.c.d.results.Add(1)
	if r.c.pooled.Load() {
		r.c.d.mu.Lock()
		r.c.d.late = append(r.c.d.late, what+" read with the connection back in the pool")
		r.c.d.mu.Unlock()
	}
}

func (r poolResult) RowsAffected() (int64, error) { r.read("RowsAffected"); return r.affected, nil }
func (r poolResult) LastInsertId() (int64, error) { r.read("LastInsertId"); return r.id, nil }

// poolRows is one row.
type poolRows struct {
	v    []int64
	done bool
}

func (r *poolRows) Columns() []string { return []string{"a", "b"}[:len(r.v)] }
func (r *poolRows) Close() error      { return nil }
func (r *poolRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	for i, v := range r.v {
		dest[i] = v
	}
	return nil
}
