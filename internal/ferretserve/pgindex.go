package ferretserve

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// FerretDB 1.24's PostgreSQL handler stores a collection as a table with
// one jsonb column, _jsonb, and answers a find whose filter holds an
// equality on a field (a find by _id among them) with
// WHERE _jsonb->$1 @> $2: containment, not equality. The _id index it
// creates is a B-tree on _jsonb->'_id', which PostgreSQL can use for =
// (FerretDB's updates and deletes by _id) but never for @>. So every find
// by _id reads the whole table: its cost grows with the collection, and a
// miss costs as much as a hit.
//
// pgIndexer gives every collection's table a GIN index on _jsonb->'_id',
// which @> can use. It changes no result, PostgreSQL keeps it up to date
// with every write, and it goes when FerretDB drops the table (or the
// schema of a dropped database). FerretDB does not know it exists:
// listIndexes does not show it. Like idIndexer, it looks for new tables
// every pollInterval, so a collection's first moments go unindexed.
//
// The key of FerretDB's query is a parameter ($1 = '_id'), so only a plan
// made for the parameters' values can use an index on _jsonb->'_id'.
// PostgreSQL switches a prepared statement to a generic plan after five
// executions when custom plans were no cheaper, and FerretDB prepares
// every statement once per connection; a statement that ran before the
// index existed keeps its generic table scan on that connection for good.
// withCustomPlans makes the server plan every execution for its values.

// pgIDIndexPrefix begins the name of the index pgIndexer adds to a table;
// the rest is a digest of the table's schema and name, so that the name
// is unique in its schema and within PostgreSQL's 63 bytes.
const pgIDIndexPrefix = "dsync_id_"

// pgLockTimeout bounds how long creating an index waits for a table lock:
// FerretDB's writes queue behind a waiting CREATE INDEX, so the indexer
// gives up quickly and tries at its next pass instead.
const pgLockTimeout = 200 * time.Millisecond

// withCustomPlans returns the PostgreSQL URL with plan_cache_mode set to
// force_custom_plan (a setting pgx sends when it connects), unless the
// URL sets plan_cache_mode itself.
func withCustomPlans(pgURL string) (string, error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL URL: %w", err)
	}
	q := u.Query()
	if !q.Has("plan_cache_mode") {
		q.Set("plan_cache_mode", "force_custom_plan")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// pgIndexer adds the _id index FerretDB's finds can use to its tables.
type pgIndexer struct {
	url    string
	logger *slog.Logger
	conn   *pgx.Conn // nil until connected, and after a failure
}

func newPGIndexer(pgURL string, logger *slog.Logger) *pgIndexer {
	return &pgIndexer{url: pgURL, logger: logger}
}

// run indexes until ctx ends.
func (x *pgIndexer) run(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	defer func() {
		if x.conn != nil {
			_ = x.conn.Close(context.Background())
		}
	}()
	for {
		if err := x.pass(ctx); err != nil && ctx.Err() == nil && x.logger != nil {
			x.logger.Debug("ferretserve: indexing _id on PostgreSQL", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// unindexedTables lists FerretDB's collection tables (every table with a
// _jsonb column but the per-database metadata) that lack the index, with
// the index's name.
const unindexedTables = `
SELECT n.nspname, c.relname, $1 || substr(md5(n.nspname || '.' || c.relname), 1, 20)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = '_jsonb' AND NOT a.attisdropped
WHERE c.relkind = 'r' AND c.relname <> '_ferretdb_database_metadata'
AND NOT EXISTS (SELECT 1 FROM pg_class i
	WHERE i.relnamespace = n.oid AND i.relname = $1 || substr(md5(n.nspname || '.' || c.relname), 1, 20))`

// pass indexes every table that lacks the index. A table it cannot index
// now (being created or dropped, or locked) is tried again at the next
// pass.
func (x *pgIndexer) pass(ctx context.Context) error {
	if x.conn == nil {
		c, err := pgx.Connect(ctx, x.url)
		if err != nil {
			return err
		}
		if _, err := c.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", pgLockTimeout.Milliseconds())); err != nil {
			_ = c.Close(ctx)
			return err
		}
		x.conn = c
	}
	rows, err := x.conn.Query(ctx, unindexedTables, pgIDIndexPrefix)
	if err != nil {
		_ = x.conn.Close(ctx)
		x.conn = nil
		return err
	}
	type table struct{ schema, name, index string }
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.schema, &t.name, &t.index); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var firstErr error
	for _, t := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s USING gin ((_jsonb->'_id') jsonb_path_ops)`,
			pgx.Identifier{t.index}.Sanitize(), pgx.Identifier{t.schema, t.name}.Sanitize())
		if _, err := x.conn.Exec(ctx, q); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}
