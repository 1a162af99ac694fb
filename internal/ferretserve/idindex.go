package ferretserve

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // FerretDB's own SQLite driver, already in this module's graph
)

// FerretDB 1.24's SQLite handler stores a collection as a table of JSON
// documents and answers a find whose whole filter is {_id: <string or
// ObjectId>} with WHERE _ferretdb_sjson->'$._id' = ?. But the _id index it
// creates is on _ferretdb_sjson->"_id": the same value, written another
// way, and SQLite uses an index on an expression only for a query that
// writes the expression the same way. So every point read by _id scans the
// table in insertion order until it meets the document: its cost grows
// with the documents inserted before it, and a miss reads them all.
//
// idIndexer gives every collection's table a second index, on the
// expression the handler's queries use. It changes no result (an index
// only changes how SQLite finds rows), SQLite keeps it up to date with
// every write, and it goes when FerretDB drops the table. FerretDB does
// not know it exists. It cannot be created inside FerretDB's own
// transaction, so idIndexer looks for new tables in the data directory
// every pollInterval: a collection's first moments go unindexed, which
// costs time, not correctness.

// pollInterval is how often idIndexer looks for tables to index.
const pollInterval = 250 * time.Millisecond

// idIndexSuffix ends the name of the index idIndexer adds to a table.
const idIndexSuffix = "_dsync_id"

// idIndexer adds the _id index the queries can use to FerretDB's tables.
type idIndexer struct {
	dir  string
	seen map[string]fileState // data files as of their last pass
	// walNext: for a data file whose last checkpoint gave up, when the
	// next may be tried.
	walNext  map[string]time.Time
	walFails map[string]int // checkpoints that gave up in a row
}

// fileState is what changes when SQLite writes a file (or its log).
type fileState struct {
	mod, walMod time.Time
	size        int64
}

func newIDIndexer(dir string) *idIndexer {
	return &idIndexer{dir: dir, seen: map[string]fileState{}, walNext: map[string]time.Time{}, walFails: map[string]int{}}
}

// run indexes until ctx ends.
func (x *idIndexer) run(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		x.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass starts long logs over (walcheckpoint.go) and indexes the
// unindexed tables of every database file written since the last pass. A file it cannot read now (being created, or dropped) is
// tried again at the next pass.
func (x *idIndexer) pass(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(x.dir, "*.sqlite"))
	for _, f := range files {
		if time.Now().After(x.walNext[f]) {
			if gaveUp, _ := checkpointWAL(ctx, f); gaveUp { // best effort: walcheckpoint.go
				x.walFails[f]++
				x.walNext[f] = time.Now().Add(walBackoff(x.walFails[f]))
			} else {
				delete(x.walFails, f)
			}
		}
		st, ok := stateOf(f)
		if !ok || st == x.seen[f] {
			continue
		}
		if err := indexFile(ctx, f); err != nil {
			delete(x.seen, f)
			continue
		}
		x.seen[f] = st
	}
}

func stateOf(file string) (fileState, bool) {
	fi, err := os.Stat(file)
	if err != nil {
		return fileState{}, false
	}
	st := fileState{mod: fi.ModTime(), size: fi.Size()}
	if wi, err := os.Stat(file + "-wal"); err == nil {
		st.walMod = wi.ModTime()
	}
	return st, true
}

// indexFile adds the _id index to every table of file's collections that
// lacks it. It waits up to 10 s for a lock rather than failing, as
// FerretDB does, but leaves the journal mode alone: the file may be one
// FerretDB has just created and is switching to WAL, and two connections
// both asking for that switch each hold a read lock and want the write
// lock, so SQLite fails one of them at once, without waiting ("database
// is locked"). When it was FerretDB's, the database's creation failed.
// A file already in WAL mode is read in WAL mode anyway (its header says
// so).
func indexFile(ctx context.Context, file string) error {
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT c.table_name FROM _ferretdb_collections c
		WHERE NOT EXISTS (SELECT 1 FROM sqlite_master m WHERE m.type = 'index' AND m.name = c.table_name || ?)`, idIndexSuffix)
	if err != nil {
		return err // no metadata table yet: a database being created
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, t+idIndexSuffix, t)
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err // the table was dropped meanwhile, or the file is busy
		}
	}
	return nil
}
