package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

func Example() {
	// In production the store is dsyncmongo.NewStore(db); the in-memory
	// store runs the same protocol, for unit tests.
	client, err := dsync.NewClient(memory.New(), dsync.ClientWithTTL(10*time.Second))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	mu, err := dsync.NewMutex(client, "nightly-billing")
	if err != nil {
		panic(err)
	}
	mu.Lock()
	first := mu.Token() // the fencing token: pass it to what you write
	mu.Unlock()

	mu.Lock()
	fmt.Println("the next hold's token is higher:", mu.Token() > first)
	mu.Unlock()
	// Output:
	// the next hold's token is higher: true
}

func ExampleMutex_TryLock() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	a, _ := dsync.NewMutex(client, "migrations")
	b, _ := dsync.NewMutex(client, "migrations")

	fmt.Println("a:", a.TryLock())
	fmt.Println("b:", b.TryLock()) // another owner holds it: false at once
	a.Unlock()
	fmt.Println("b after a unlocked:", b.TryLock())
	b.Unlock()
	// Output:
	// a: true
	// b: false
	// b after a unlocked: true
}

// TryLockContext says why a try failed: the lock is held (ErrHeld, with
// the holder), the context ended, or the store did not answer in time.
func ExampleMutex_TryLockContext() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	a, _ := dsync.NewMutex(client, "migrations")
	b, _ := dsync.NewMutex(client, "migrations")
	a.Lock()
	defer a.Unlock()

	err = b.TryLockContext(context.Background())
	var held *dsync.HeldError
	switch {
	case errors.As(err, &held):
		fmt.Println("held by a:", held.Token == a.Token())
	case err != nil:
		fmt.Println("the store did not answer:", err) // an outage, not contention
	}
	// Output:
	// held by a: true
}

// Two processes on one store: the holder is cut off from the store, its
// hold ends at its local deadline, and then the other process takes the
// lock over, with a higher fencing token.
func Example_partition() {
	store := memory.New()
	procA, procB := store.Process(), store.Process() // one view per process
	a, err := dsync.NewClient(procA, dsync.ClientWithTTL(200*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := dsync.NewClient(procB, dsync.ClientWithTTL(200*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer b.Close()

	ma, _ := dsync.NewMutex(a, "report")
	mb, _ := dsync.NewMutex(b, "report")
	ma.Lock()
	procA.SetReachable(false) // a is partitioned; b still reaches the store
	<-ma.Lost()
	fmt.Println("a lost its hold")

	mb.Lock()
	fmt.Println("b holds with a higher token:", mb.Token() > ma.Token())
	mb.Unlock()
	fmt.Println("a's Unlock reports the loss:", errors.Is(ma.UnlockContext(context.Background()), dsync.ErrLost))
	// Output:
	// a lost its hold
	// b holds with a higher token: true
	// a's Unlock reports the loss: true
}

func ExampleMutex_LockContext() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	holder, _ := dsync.NewMutex(client, "report")
	holder.Lock()
	defer holder.Unlock()

	waiter, _ := dsync.NewMutex(client, "report")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = waiter.LockContext(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
}

// A long critical section watches Lost and passes the fencing token to the
// resource it writes, so a write made after the lease ended is rejected.
func ExampleMutex_Lost() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	mu, _ := dsync.NewMutex(client, "ledger")
	mu.Lock()
	defer mu.Unlock()

	for batch := range 3 {
		select {
		case <-mu.Lost():
			fmt.Println("lease lost: stop writing")
			return
		default:
		}
		writeBatch(batch, mu.Token())
	}
	// Output:
	// batch 0 written, fenced by the hold's token
	// batch 1 written, fenced by the hold's token
	// batch 2 written, fenced by the hold's token
}

// writeBatch stands for a write that the resource accepts only if token
// is at least the highest it has seen.
func writeBatch(batch int, token uint64) {
	if token > 0 {
		fmt.Printf("batch %d written, fenced by the hold's token\n", batch)
	}
}

// TestREADMESnippetsAreExamples keeps the Go snippets of the README and
// of the pages under docs/ compiled. Each ```go block must follow one of
// two comments, naming a file from the repository's root:
//
//	<!-- snippet: <file> <example function> -->
//
// for a whole program: an import block whose lines all appear, in order,
// in that file's imports, then exactly the body of that function (blank
// lines and indentation aside); or
//
//	<!-- excerpt: <file> <example function> -->
//
// for a few lines of one: they appear, in a row, in that function's body.
func TestREADMESnippetsAreExamples(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join("..", "README.md")}, pages...)
	block := regexp.MustCompile("(?s)<!-- (snippet|excerpt): (\\S+) (\\S+) -->\n```go\n(.*?)\n```")
	total := 0
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.ToSlash(strings.TrimPrefix(page, ".."+string(filepath.Separator)))
		found := block.FindAllStringSubmatch(string(src), -1)
		if n := strings.Count(string(src), "```go"); n != len(found) {
			t.Errorf("%s has %d Go blocks, %d of them after a snippet or excerpt comment", name, n, len(found))
		}
		total += len(found)
		for _, m := range found {
			checkSnippet(t, name, m[1], m[2], m[3], m[4])
		}
	}
	if total == 0 {
		t.Fatal("no Go snippets found in the README or docs/")
	}
}

// checkSnippet checks one block of page against the example fn of file.
func checkSnippet(t *testing.T, page, kind, file, fn, text string) {
	t.Helper()
	fileImports, fileBody, err := exampleSource(filepath.Join("..", filepath.FromSlash(file)), fn)
	if err != nil {
		t.Errorf("%s: %s of %s %s: %v", page, kind, file, fn, err)
		return
	}
	if kind == "excerpt" {
		if got := codeLines(text); len(got) == 0 || !contiguous(got, fileBody) {
			t.Errorf("%s: excerpt is not lines in a row of the body of %s in %s:\n%s", page, fn, file, strings.Join(got, "\n"))
		}
		return
	}
	imports, body, ok := strings.Cut(text, "\n)\n")
	if !ok || !strings.HasPrefix(imports, "import (\n") {
		t.Errorf("%s: snippet of %s %s: want an import block, then the body", page, file, fn)
		return
	}
	if line, ok := subsequence(codeLines(imports), fileImports); !ok {
		t.Errorf("%s: snippet of %s %s imports %s, which the file does not (in this order)", page, file, fn, line)
	}
	if got := codeLines(body); !slices.Equal(got, fileBody) {
		t.Errorf("%s: snippet differs from the body of %s in %s:\npage:\n%s\n\nexample:\n%s",
			page, fn, file, strings.Join(got, "\n"), strings.Join(fileBody, "\n"))
	}
}

// contiguous reports whether sub appears in all as lines in a row.
func contiguous(sub, all []string) bool {
	for i := 0; i+len(sub) <= len(all); i++ {
		if slices.Equal(all[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// exampleSource returns the lines of the import declarations of a Go file
// and those of the body of its function fn, without the braces.
func exampleSource(path, fn string) (imports, body []string, err error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	text := func(from, to token.Pos) string {
		return string(src[fset.Position(from).Offset:fset.Position(to).Offset])
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				imports = append(imports, codeLines(text(d.Pos(), d.End()))...)
			}
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == fn {
				body = codeLines(text(d.Body.Lbrace+1, d.Body.Rbrace))
			}
		}
	}
	if body == nil {
		return nil, nil, fmt.Errorf("no function %s in %s", fn, path)
	}
	return imports, body, nil
}

// codeLines returns the non-blank lines of s, trimmed.
func codeLines(s string) []string {
	var lines []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// subsequence reports whether sub appears in order within all; if not, it
// returns the first line of sub that does not.
func subsequence(sub, all []string) (string, bool) {
	i := 0
	for _, line := range sub {
		for i < len(all) && all[i] != line {
			i++
		}
		if i == len(all) {
			return line, false
		}
		i++
	}
	return "", true
}
