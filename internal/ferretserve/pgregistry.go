package ferretserve

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// FerretDB 1.24's PostgreSQL handler learns which databases exist once
// per process, on the first command that needs its registry, within that
// command's context: it lists the schemas that hold its metadata table,
// then reads each one's list of collections. If one of those reads fails
// (the command's maxTimeMS runs out while PostgreSQL is slow, PostgreSQL
// refuses a connection), it keeps what it had loaded so far, for good:
// every database it had not loaded does not exist for that process. A
// find there finds nothing, a tailable find is refused (the collection is
// not capped), and every write there fails (`relation
// "_ferretdb_database_metadata" already exists`, SQLSTATE 42P07) until the
// process restarts. A server restarted under load meets it: its clients'
// commands, with their deadlines, reach it before anyone else's.
//
// startOnPostgreSQL therefore checks, once the server listens, that it
// knows every database PostgreSQL holds for it, asking with a command
// that has no deadline (which makes the load happen if no client's
// command has yet); the load happens once, so what the check sees stays
// true. When a database is missing, it stops the server and starts it
// again on the same address, after a pause that doubles from
// registryPause up to registryMaxPause, until registryPatience has
// passed since the first start. The pauses matter: what made a load fail
// (a lock held on a metadata table, PostgreSQL refusing connections for
// a while) lasts, and starts one after another gave up within half a
// second (CI, TestRestartOnPostgreSQLKnowsEveryDatabase).

// registryPatience bounds how long startOnPostgreSQL starts FerretDB
// again: past it, it gives up with an error.
const registryPatience = 30 * time.Second

// registryPause and registryMaxPause bound the pause between two starts.
const (
	registryPause    = 100 * time.Millisecond
	registryMaxPause = 2 * time.Second
)

// registryCheckTimeout bounds one check: a slow PostgreSQL makes the
// load slow, and a check that cannot finish proves nothing either way.
const registryCheckTimeout = time.Minute

// startOnPostgreSQL runs FerretDB on PostgreSQL at pgURL and returns it
// once it knows every database PostgreSQL holds for it (or once a check
// could not tell).
func startOnPostgreSQL(cfg Config, pgURL string) (*Server, error) {
	first, pause := time.Now(), registryPause
	for start := 1; ; start++ {
		s, err := startOnce(cfg, pgURL)
		if err != nil {
			return nil, err
		}
		missing, err := checkRegistry(s.URI, pgURL)
		switch {
		case err != nil:
			if cfg.Logger != nil {
				cfg.Logger.Warn("ferretserve: could not check which databases FerretDB knows", "error", err)
			}
			return s, nil
		case len(missing) == 0:
			return s, nil
		case time.Since(first)+pause > registryPatience:
			_ = s.Stop(15 * time.Second)
			return nil, fmt.Errorf("FerretDB does not know databases %q that PostgreSQL holds for it, after %d starts in %v", missing, start, time.Since(first).Round(time.Millisecond))
		}
		if cfg.Logger != nil {
			cfg.Logger.Error("ferretserve: FerretDB failed to load databases that PostgreSQL holds for it; starting it again", "missing", missing, "start", start, "after", pause)
		}
		if err := s.Stop(15 * time.Second); err != nil {
			return nil, err
		}
		time.Sleep(pause)
		pause = min(2*pause, registryMaxPause)
		if u, err := url.Parse(s.URI); err == nil {
			cfg.Addr = u.Host // the same port: clients keep their URI
		}
	}
}

// checkRegistry returns the databases PostgreSQL holds for the FerretDB
// at mongoURI that it does not know. It looks twice when the first look
// finds something amiss: a load that fails inside the first look answers
// its listDatabases with the load's error (the next call gets what was
// loaded), and a database dropped between the two reads of one look seems
// missing, so a database counts as missing when both looks find it so, or
// the second alone when the first failed.
func checkRegistry(mongoURI, pgURL string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), registryCheckTimeout)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	pg, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	defer func() { _ = pg.Close(context.Background()) }()
	first, firstErr := lookForMissing(ctx, c, pg)
	if firstErr == nil && len(first) == 0 {
		return nil, nil
	}
	second, err := lookForMissing(ctx, c, pg)
	if err != nil || firstErr != nil {
		return second, err
	}
	return slices.DeleteFunc(second, func(name string) bool { return !slices.Contains(first, name) }), nil
}

// lookForMissing reads the schemas that hold FerretDB's metadata table,
// then the databases FerretDB lists, and returns the schemas it does not
// list. PostgreSQL is read first, so that a database made between the
// reads is in both.
func lookForMissing(ctx context.Context, c *mongo.Client, pg *pgx.Conn) ([]string, error) {
	held, err := heldDatabases(ctx, pg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	known, err := c.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("FerretDB: listDatabases: %w", err)
	}
	return slices.DeleteFunc(held, func(name string) bool { return slices.Contains(known, name) }), nil
}

// heldDatabases lists the schemas that hold FerretDB's metadata table,
// as FerretDB's own load does: each is a database of FerretDB's.
func heldDatabases(ctx context.Context, pg *pgx.Conn) ([]string, error) {
	rows, err := pg.Query(ctx, `SELECT DISTINCT table_schema FROM information_schema.columns WHERE table_name = '_ferretdb_database_metadata'`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
