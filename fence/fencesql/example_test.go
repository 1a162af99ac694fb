package fencesql_test

import (
	"context"
	"database/sql"
	"errors"
	"log"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencesql"
)

// The example needs a database and its database/sql driver, which this
// module does not depend on, so it is compiled but not run.

// The holder of a lock (a dsync.Mutex of name "invoices") writes in a
// transaction that checks the hold's token first. A holder paused past
// its lease gets fence.ErrStale, and its transaction changes nothing.
func Example() {
	var db *sql.DB      // sql.Open("pgx", ...), with the driver's import
	var mu *dsync.Mutex // dsync.NewMutex(locks, "invoices"), held: mu.Lock()
	ctx := context.Background()

	f, err := fencesql.New(fencesql.PostgreSQL)
	if err != nil {
		log.Fatal(err)
	}
	if err := f.CreateTable(ctx, db); err != nil { // or f.DDL() in a migration
		log.Fatal(err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback() // after Commit, a no-op
	err = f.Check(ctx, tx, "invoices", mu.Token())
	if errors.Is(err, fence.ErrStale) {
		log.Printf("not written: %v", err) // a later holder has written
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE invoices SET paid = true WHERE id = $1", 42); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
}
