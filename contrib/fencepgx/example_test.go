package fencepgx_test

import (
	"context"
	"errors"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/go-dsync/dsync/contrib/fencepgx"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencesql"
)

// The example needs a PostgreSQL server, so it is compiled but not run.

// The holder of a lock (a dsync.Mutex of name "invoices") writes in a
// pgx transaction that checks the hold's token first.
func Example() {
	var pool *pgxpool.Pool // pgxpool.New(ctx, "postgres://...")
	var mu *dsync.Mutex    // dsync.NewMutex(locks, "invoices"), held: mu.Lock()
	ctx := context.Background()

	f, err := fencesql.New(fencesql.PostgreSQL) // its table: f.DDL()
	if err != nil {
		log.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx) // after Commit, a no-op
	err = fencepgx.Check(ctx, f, tx, "invoices", mu.Token())
	if errors.Is(err, fence.ErrStale) {
		log.Printf("not written: %v", err) // a later holder has written
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE invoices SET paid = true WHERE id = $1", 42); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}
