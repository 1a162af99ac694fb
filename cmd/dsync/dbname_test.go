//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestInvalidDatabaseName: a database name MongoDB refuses, from --db or
// from the connection string's path, is one usage error, said once,
// before anything is written; not an index privilege problem with
// advice about a library option.
func TestInvalidDatabaseName(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	base, opts, _ := strings.Cut(uri, "?")
	withSpace := strings.TrimSuffix(base, "/") + "/my%20db"
	if opts != "" {
		withSpace += "?" + opts
	}
	for _, tc := range []struct {
		uri  string
		args []string
		says string
	}{
		{uri, []string{"--db", "a.b", "status"}, `--db: invalid database name "a.b": it contains "."`},
		{uri, []string{"--db", "a.b", "lock", "k", "--", "true"}, `--db: invalid database name "a.b": it contains "."`},
		{withSpace, []string{"lock", "k", "--", "true"}, `the connection string's database: invalid database name "my db": it contains " "`},
	} {
		r := runDsync(t, env(tc.uri), "", slow(30*time.Second), tc.args...)
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || strings.Count(r.stderr, "invalid database name") != 1 ||
			!strings.Contains(r.stderr, tc.says) || strings.Contains(r.stderr, "privilege") || strings.Contains(r.stderr, "WithIndexManagement") {
			t.Errorf("dsync %s: exit %d, stderr %q; want %d and one line saying %s", strings.Join(tc.args, " "), r.code, r.stderr, exitUsage, tc.says)
		}
	}
}
