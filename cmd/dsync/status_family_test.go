//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// libraryClient returns a dsync Client on database db of the server at
// uri, as a program using the library has one; it is closed when t ends.
func libraryClient(t *testing.T, uri, db string) *dsync.Client {
	t.Helper()
	store, err := dsyncmongo.NewStore(mongotest.NewClient(t, uri).Database(db))
	if err != nil {
		t.Fatal(err)
	}
	c, err := dsync.NewClient(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStatusShowsSharedHolds: an RWMutex's readers and a Semaphore's
// holders all show, a line each, with what they hold, and those that wait
// behind them are counted.
func TestStatusShowsSharedHolds(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	e := env(uri)
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()
	b := libraryClient(t, uri, db)

	// Two readers hold "doc"; a writer waits behind them.
	for range 2 {
		rw, err := dsync.NewRWMutex(b, "doc")
		if err != nil {
			t.Fatal(err)
		}
		if err := rw.RLockContext(ctx); err != nil {
			t.Fatal(err)
		}
		defer rw.RUnlock()
	}
	writer, err := dsync.NewRWMutex(b, "doc")
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer.LockContext(wctx) }()
	defer func() { stopWriter(); <-writerDone }()

	// Units 1 and 2 of 3 held on "encode"; a request for 2 more waits.
	for _, n := range []int64{1, 2} {
		s, err := dsync.NewSemaphore(b, "encode", 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Acquire(ctx, n); err != nil {
			t.Fatal(err)
		}
		defer s.Release(n)
	}
	waiter, err := dsync.NewSemaphore(b, "encode", 3)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopWaiter := context.WithCancel(ctx)
	waiterDone := make(chan error, 1)
	go func() { waiterDone <- waiter.Acquire(sctx, 2) }()
	defer func() { stopWaiter(); <-waiterDone }()

	// The waiters' claims are inserted in the background: read until
	// both are counted.
	var st statusJSON
	for {
		r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json", "--prefix", "dsync:")
		st = parseStatusJSON(t, r.stdout)
		waiting := 0
		for _, l := range st.locks {
			waiting += len(l.Waiting)
		}
		if waiting == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("status never counted both waiters:\n%s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	byKey := map[string]statuspage.Lock{}
	for _, l := range st.locks {
		byKey[l.Key] = l
	}
	rw := byKey["dsync:rw/doc"]
	if rw.State != "read" || len(rw.Holders) != 2 || len(rw.Waiting) != 1 || rw.Holders[0].Mode != "shared" || rw.Holders[1].Mode != "shared" ||
		rw.Waiting[0].Mode != "exclusive" || rw.Holders[0].Token >= rw.Holders[1].Token {
		t.Errorf("the RWMutex: %+v; want read by 2 readers in token order, 1 waiting", rw)
	}
	sem := byKey["dsync:sem/encode"]
	if sem.State != "3/3" || len(sem.Holders) != 2 || sem.Holders[0].Mode != "weighted" || sem.Holders[0].Limit != 3 ||
		sem.Holders[0].Weight != 1 || sem.Holders[1].Weight != 2 || len(sem.Waiting) != 1 || sem.Waiting[0].Weight != 2 {
		t.Errorf("the Semaphore: %+v; want 3/3 units held by 2 holders (1 and 2), 1 waiting", sem)
	}

	// The table: a line per holder.
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--prefix", "dsync:")
	lines := map[string]int{}
	for _, l := range readLines(r.stdout) {
		if f := strings.Fields(l); len(f) > 3 {
			lines[f[0]+" "+f[1]+" "+f[2]]++
		}
	}
	if lines["doc rwmutex read"] != 2 || lines["encode semaphore 3/3"] != 2 {
		t.Errorf("status: want two lines each for the readers and the semaphore's holders:\n%s", r.stdout)
	}
}
