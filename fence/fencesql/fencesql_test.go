package fencesql

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/fence"
)

func TestNewTableNames(t *testing.T) {
	good := []string{"dsync_fence", "app.dsync_fence", "_t", "T9", "s_1.t_2", strings.Repeat("a", 57), strings.Repeat("a", 63) + "." + strings.Repeat("b", 57)}
	for _, name := range good {
		f, err := New(PostgreSQL, WithTable(name))
		if err != nil {
			t.Errorf("WithTable(%q): %v", name, err)
			continue
		}
		if f.Table() != name {
			t.Errorf("WithTable(%q): Table() = %q", name, f.Table())
		}
	}
	bad := []string{"", ".", "a.", ".a", "a.b.c", "9t", "a.9t", "t-1", "t 1", "t;DROP TABLE x", `"t"`, "`t`", "t\x00", "tä", strings.Repeat("a", 58), "a." + strings.Repeat("b", 58), strings.Repeat("a", 64) + ".b"}
	for _, name := range bad {
		_, err := New(MySQL, WithTable(name))
		if !errors.Is(err, ErrBadTable) {
			t.Errorf("WithTable(%q): err = %v, want ErrBadTable", name, err)
		}
	}
	if f, err := New(SQLite); err != nil || f.Table() != DefaultTable {
		t.Errorf("New(SQLite) = %v, %v; want table %q", f, err, DefaultTable)
	}
	f, err := New(SQLite)
	if err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]MarksOption{
		"WithAdmitLease(500ms)":   WithAdmitLease(500 * time.Millisecond),
		"WithReleaseTimeout(0s)":  WithReleaseTimeout(0),
		"WithReleaseTimeout(-1s)": WithReleaseTimeout(-time.Second),
		"nil":                     nil,
	} {
		if m, err := f.Marks(nil, opt); err == nil {
			t.Errorf("Marks(%s) = %v, want an error", name, m)
		}
	}
	if _, err := f.Marks(nil, WithAdmitLease(time.Second), WithReleaseTimeout(time.Millisecond)); err != nil {
		t.Errorf("Marks with the least values accepted: %v", err)
	}
	if f, err := New(SQLite, nil); err == nil || !strings.Contains(err.Error(), "nil option") {
		t.Errorf("New(SQLite, nil) = %v, %v; want a nil option's error", f, err)
	}
}

func TestNewBadDialect(t *testing.T) {
	for _, d := range []Dialect{0, SQLite + 1, -1} {
		if _, err := New(d); !errors.Is(err, ErrBadDialect) {
			t.Errorf("New(%v): err = %v, want ErrBadDialect", d, err)
		}
	}
}

func TestDDL(t *testing.T) {
	want := map[Dialect]string{
		PostgreSQL: "CREATE TABLE IF NOT EXISTS app.marks (fence_key BYTEA PRIMARY KEY, mark BIGINT NOT NULL)",
		MySQL:      "CREATE TABLE IF NOT EXISTS app.marks (fence_key VARBINARY(512) NOT NULL PRIMARY KEY, mark BIGINT NOT NULL) ENGINE=InnoDB",
		SQLite:     "CREATE TABLE IF NOT EXISTS app.marks (fence_key BLOB NOT NULL PRIMARY KEY, mark INTEGER NOT NULL)",
	}
	for d, w := range want {
		f, err := New(d, WithTable("app.marks"))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.DDL(); got != w {
			t.Errorf("%v DDL:\n got %s\nwant %s", d, got, w)
		}
	}
}

// TestDocShowsDDL: the package doc shows each dialect's DDL as DDL
// returns it for the default table.
func TestDocShowsDDL(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Dialect{PostgreSQL, MySQL, SQLite} {
		f, _ := New(d)
		if !strings.Contains(string(b), f.DDL()) {
			t.Errorf("the package doc does not show %v's DDL %q", d, f.DDL())
		}
	}
}

// TestCheckBadInputNoIO: bad keys, tokens and a nil transaction are
// refused before any I/O (a nil *sql.Tx would panic on use).
func TestCheckBadInputNoIO(t *testing.T) {
	f, _ := New(PostgreSQL)
	ctx := context.Background()
	cases := []struct {
		key   string
		token uint64
		tx    *sql.Tx
		want  error
	}{
		{"", 1, nil, fence.ErrBadKey},
		{strings.Repeat("k", fence.MaxKeyLen+1), 1, nil, fence.ErrBadKey},
		{"k", 0, nil, fence.ErrBadToken},
		{"k", fence.MaxToken + 1, nil, fence.ErrBadToken},
		{"k", 1, nil, ErrNoTx},
		{strings.Repeat("k", fence.MaxKeyLen), fence.MaxToken, nil, ErrNoTx},
	}
	for _, c := range cases {
		if err := f.Check(ctx, c.tx, c.key, c.token); !errors.Is(err, c.want) {
			t.Errorf("Check(%d-byte key, %d): %v, want %v", len(c.key), c.token, err, c.want)
		}
	}
	// Marks refuses bad input before touching its (nil) database.
	m, err := f.Marks(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases[:4] {
		if _, err := m.Admit(ctx, c.key, c.token); !errors.Is(err, c.want) {
			t.Errorf("Admit(%d-byte key, %d): %v, want %v", len(c.key), c.token, err, c.want)
		}
	}
}

// TestMySQLStatementLiterals: the MySQL statements carry the key in hex,
// whatever bytes it holds.
func TestMySQLStatementLiterals(t *testing.T) {
	f, _ := New(MySQL)
	stmt, args := f.lockSQL("a'b\\\x00")
	if args != nil || stmt != "SELECT mark FROM dsync_fence WHERE fence_key = X'6127625c00' FOR UPDATE" {
		t.Errorf("lockSQL = %q, %v", stmt, args)
	}
}
