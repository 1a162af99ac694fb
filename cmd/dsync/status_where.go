//go:build unix

package main

// Where dsync status reads, said to the user: the database and lock
// collection at the top of the table, and, when it finds nothing there,
// the other databases of the server that have a lock collection of that
// name (a program that keeps its locks in another database than the
// command's is the usual reason a lock held is not listed).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// whereLine is the first line of dsync status's table: the database and
// lock collection it reads, and the server's connection string.
func (g *globals) whereLine() string {
	uri, _ := g.resolveURI()
	return fmt.Sprintf("database %s, collection %s, at %s", g.db, g.collection, redact(uri))
}

// maxElsewhere bounds how many other databases status looks into for a
// lock collection, and elsewhereTime how long it looks: a hint is not
// worth a long wait on a server with many databases.
const (
	maxElsewhere  = 100
	elsewhereTime = 5 * time.Second
)

// elsewhere returns the other databases of the server (beside db, and
// the server's own admin, local and config) that have a collection named
// coll, the first maxElsewhere of those the user may list. It returns
// nil when the server does not let this user list databases: the hint is
// not worth a failure.
func elsewhere(ctx context.Context, client *mongo.Client, db, coll string) []string {
	ctx, cancel := context.WithTimeout(ctx, elsewhereTime)
	defer cancel()
	names, err := client.ListDatabaseNames(ctx, bson.D{}, options.ListDatabases().SetAuthorizedDatabases(true))
	if err != nil {
		return nil
	}
	var found []string
	looked := 0
	for _, name := range names {
		switch name {
		case db, "admin", "local", "config":
			continue
		}
		if looked++; looked > maxElsewhere || ctx.Err() != nil {
			break
		}
		colls, err := client.Database(name).ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll}})
		if err == nil && len(colls) > 0 {
			found = append(found, name)
		}
	}
	return found
}

// elsewhereHint says where else to look, given the databases elsewhere
// found: "" when none.
func (g *globals) elsewhereHint(dbs []string) string {
	switch len(dbs) {
	case 0:
		return ""
	case 1:
		uri, _ := g.resolveURI()
		how := "MONGODB_URI=" + redact(uriWithDatabase(uri, dbs[0]))
		if g.uri != "" {
			how = "--uri " + redact(uriWithDatabase(uri, dbs[0]))
		}
		return fmt.Sprintf("database %s has %s: use --db %s or %s", dbs[0], g.collection, dbs[0], how)
	}
	const shown = 3
	list := strings.Join(dbs[:min(len(dbs), shown)], ", ")
	if len(dbs) > shown {
		list += fmt.Sprintf(" and %d more", len(dbs)-shown)
	}
	return fmt.Sprintf("databases %s have %s: use --db NAME, or name it in the connection string (mongodb://host/NAME)", list, g.collection)
}

// uriWithDatabase is uri with its path naming database db: what the
// driver reads as the connection string's database.
func uriWithDatabase(uri, db string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	// The hosts end at the first '/' after the user information, whose
	// password may hold a '/' only percent-encoded.
	hosts := rest
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if slash := strings.Index(rest[at:], "/"); slash >= 0 {
			hosts = rest[:at+slash]
		}
	} else if slash := strings.Index(rest, "/"); slash >= 0 {
		hosts = rest[:slash]
	}
	out := scheme + "://" + hosts + "/" + db
	if hasQuery {
		out += "?" + query
	}
	return out
}
