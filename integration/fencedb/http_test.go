package fencedb

import (
	"database/sql"
	"testing"

	"github.com/go-dsync/dsync/fence/fencehttp/fencehttptest"
	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// TestConformanceHTTP runs the conformance suite over HTTP
// (fence/fencehttp) with fencesql's Marks as the mark store, on each
// dialect: two instances of the service, each with a Marks of its own
// (and, but on SQLite, a pool of its own) on one database, so that they
// fence one another only through it.
func TestConformanceHTTP(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		other := db
		if d != fencesql.SQLite {
			other = sqlOpenLike(t, d, db)
		}
		r := fencehttptest.NewResource(marks(t, f, db), marks(t, f, other))
		defer r.Close()
		fencetest.Run(t, r, fencetest.Options{Trials: trials()})
	})
}
