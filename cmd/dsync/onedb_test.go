//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/statuspage"
)

// TestExamplesUseTheCommandsDatabase: every store the repository's
// Example functions make (the README's Go snippets are their bodies) is
// on client.Database(dsyncmongo.DefaultDatabase), the database the dsync
// command uses unless told otherwise, so that a program written from
// them and `dsync lock NAME` exclude each other. (The examples used
// "app", the command "dsync": a shell lock and a Go lock of one name
// both held.)
func TestExamplesUseTheCommandsDatabase(t *testing.T) {
	if defaultDB != dsyncmongo.DefaultDatabase {
		t.Errorf("the command's default database is %q, the library's DefaultDatabase %q", defaultDB, dsyncmongo.DefaultDatabase)
	}
	root := filepath.Join("..", "..")
	stores := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasPrefix(d.Name(), "example") || !strings.HasSuffix(d.Name(), "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isSelector(call.Fun, "dsyncmongo", "NewStore") || len(call.Args) == 0 {
				return true
			}
			stores++
			db, ok := call.Args[0].(*ast.CallExpr)
			if !ok || !isSelector(db.Fun, "", "Database") || len(db.Args) != 1 || !isSelector(db.Args[0], "dsyncmongo", "DefaultDatabase") {
				arg := src[fset.Position(call.Args[0].Pos()).Offset:fset.Position(call.Args[0].End()).Offset]
				t.Errorf("%s: NewStore(%s): want NewStore(client.Database(dsyncmongo.DefaultDatabase)), the command's database", fset.Position(call.Pos()), arg)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stores == 0 {
		t.Fatal("no example makes a store: the test looks in the wrong place")
	}
}

// isSelector reports whether e is x.sel (any x when x is "").
func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != sel {
		return false
	}
	if x == "" {
		return true
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x
}

// TestOneDatabaseEverywhere follows the README on a server of its own:
// dsync server's banner says which database the commands use; with the
// MONGODB_URI it prints, dsync lock and a program on
// client.Database(dsyncmongo.DefaultDatabase) exclude each other; and
// dsync status names the database it reads, and, when it finds nothing
// there, the database where a program keeps its locks, and how to read
// it.
func TestOneDatabaseEverywhere(t *testing.T) {
	t.Parallel()
	srv := startServer(t, env(""), "--temp")
	if banner := strings.Join(srv.lines, "\n"); !strings.Contains(banner, `database "dsync"`) || !strings.Contains(banner, "dsyncmongo.DefaultDatabase") {
		t.Errorf("dsync server's banner does not say which database the commands use:\n%s", banner)
	}
	e := env(srv.uri)
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()

	// A program that keeps its locks elsewhere ("app") holds one.
	elsewhere, err := dsync.NewMutex(libraryClient(t, srv.uri, "app"), "report")
	if err != nil {
		t.Fatal(err)
	}
	if err := elsewhere.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Unlock()
	r := runDsync(t, e, "", slow(30*time.Second), "status")
	lines := readLines(r.stdout)
	wantHint := "no locks or elections in dsync.dsync_locks; database app has dsync_locks: use --db app or MONGODB_URI=" + srv.uri + "app"
	if r.code != 0 || len(lines) != 2 || lines[0] != "database dsync, collection dsync_locks, at "+srv.uri || lines[1] != wantHint {
		t.Errorf("dsync status with a lock held in database app: exit %d\n%s\nwant the database read, then\n%s\nstderr: %s", r.code, r.stdout, wantHint, r.stderr)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "status", "--json")
	var rec statuspage.Record
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &rec); err != nil || rec.Summary == nil {
		t.Fatalf("dsync status --json: %v\n%s\nwant a summary alone", err, r.stdout)
	}
	if sum := rec.Summary; sum.Database != "dsync" || sum.Collection != "dsync_locks" || len(sum.Elsewhere) != 1 || sum.Elsewhere[0] != "app" {
		t.Errorf("dsync status --json: %v\n%s\nwant a summary of dsync.dsync_locks naming app elsewhere", err, r.stdout)
	}

	// dsync lock as the README's shell section runs it, and a program
	// written from its Go snippets: one lock.
	dir := t.TempDir()
	cmd := dsyncCmd(ctx, e, "lock", "shared-report", "--",
		"sh", "-c", `touch "$1/holding"; while [ ! -e "$1/release" ]; do sleep 0.05; done`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "holding"), slow(30*time.Second))
	program := libraryClient(t, srv.uri, dsyncmongo.DefaultDatabase)
	mu, err := dsync.NewMutex(program, "shared-report")
	if err != nil {
		t.Fatal(err)
	}
	if err := mu.TryLockContext(ctx); !errors.Is(err, dsync.ErrHeld) {
		t.Errorf("a program's TryLock of shared-report while dsync lock holds it: %v, want ErrHeld", err)
		if err == nil {
			mu.Unlock()
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dsync lock shared-report: %v", err)
	}
	if err := mu.LockContext(ctx); err != nil {
		t.Fatalf("the program's Lock once dsync lock released: %v", err)
	}
	mu.Unlock()
}
