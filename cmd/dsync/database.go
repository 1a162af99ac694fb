//go:build unix

package main

// The database a command uses: --db's, else the one the connection
// string names, else dsyncmongo.DefaultDatabase, checked before any I/O.

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// checkDatabase checks, before any I/O, that MongoDB would accept the
// database a command uses, which --db or else the connection string
// names: dsyncmongo refuses the store otherwise, and the server would
// refuse it at the first write.
func (g *globals) checkDatabase() error {
	err := dsyncmongo.CheckDatabaseName(g.db)
	if err == nil {
		return nil
	}
	from := "--db"
	if !g.dbSet {
		from = "the connection string's database"
	}
	return usageErr{fmt.Errorf("%s: %s", from, strings.TrimPrefix(err.Error(), "dsyncmongo: "))}
}

// dbFlag is --db: it records that the flag was given, since a database
// named by the connection string (mongodb://host/app) is used otherwise.
type dbFlag struct{ g *globals }

func (f dbFlag) String() string {
	if f.g == nil {
		return ""
	}
	return f.g.db
}

func (f dbFlag) Set(s string) error {
	f.g.db, f.g.dbSet = s, true
	return nil
}

// database returns the database a command uses: --db's if given, else
// the one the connection string names (mongodb://host/app, as the
// driver reads it), else defaultDB.
func (g *globals) database(uri string) string {
	if g.dbSet {
		return g.db
	}
	if cs, err := connstring.Parse(uri); err == nil && cs.Database != "" {
		return cs.Database
	}
	return defaultDB
}
