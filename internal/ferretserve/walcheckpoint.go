package ferretserve

import (
	"context"
	"database/sql"
	"os"
	"time"
)

// FerretDB's SQLite handler runs its data files in WAL mode, where SQLite
// copies the log back into the database file (a checkpoint) after every
// thousand pages written, without waiting for anyone: it copies what no
// reader still needs, and starts the log over only once a checkpoint has
// copied all of it and no reader reads from it. With a store that is
// written and read without pause (processes taking locks while others'
// event cursors poll every 10 ms), some reader always holds an older
// snapshot, no checkpoint copies all of the log, and the log grows
// without bound: 458 MB in 13 minutes while the benchmarks loaded keys.
// SQLite then slows every read (it looks a page up in the index of each
// 4,096 pages of log) until FerretDB's answers outlast the clients'
// timeouts ("interrupted").
//
// checkpointWAL starts a long log over: a TRUNCATE checkpoint waits for
// the readers of the log to finish (new readers read the database file,
// all of it copied by then) and empties the log. While it waits, writers
// wait too, at most walBusy; if readers outlast that, it gives up and
// tries again later (walRetry). It changes no data, only where SQLite finds
// it.

// walLimit is the size of a data file's log above which it is started
// over.
var walLimit int64 = 32 << 20

// walBusy is how long a checkpoint waits for the log's readers (and makes
// writers wait) before it gives up until the next pass.
const walBusy = "500"

// walRetry is how long after a checkpoint that gave up the next is tried,
// doubling with each that gives up in a row up to walRetryMax: writers
// wait while one waits for readers, and a reader that never finishes
// (FerretDB's pool can keep a connection inside a transaction whose
// COMMIT failed) would have every writer wait a quarter of the time.
const (
	walRetry    = 2 * time.Second
	walRetryMax = 2 * time.Minute
)

// walBackoff is how long to wait before the next checkpoint after fails
// gave up in a row.
func walBackoff(fails int) time.Duration {
	d := walRetry
	for range min(fails, 10) - 1 {
		d *= 2
	}
	return min(d, walRetryMax)
}

// checkpointWAL starts file's log over if it has grown past walLimit. It
// reports whether it tried and gave up (readers outlasted walBusy).
func checkpointWAL(ctx context.Context, file string) (gaveUp bool, err error) {
	wi, err := os.Stat(file + "-wal")
	if err != nil || wi.Size() < walLimit {
		return false, nil
	}
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout("+walBusy+")&_pragma=journal_mode(wal)")
	if err != nil {
		return false, err
	}
	defer db.Close()
	var busy, logged, copied int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &copied); err != nil {
		return true, err // SQLITE_BUSY: a writer or another checkpoint held the log
	}
	return busy != 0, nil
}
