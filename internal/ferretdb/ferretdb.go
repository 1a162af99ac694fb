// Package ferretdb recognises FerretDB by what it adds to its replies: the
// one recognition of the store (dsync/mongo), of fencemongo and of the
// dsync command's doctor, so that they take the same servers for
// FerretDB, and for the same release of it.
package ferretdb

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Release returns the release of FerretDB that reply, to buildInfo (or
// serverStatus, which carries the same fields), names: 1 or 2 (FerretDB
// 2 keeps its data in PostgreSQL, with the DocumentDB extension); 0 for
// a server that is not FerretDB. FerretDB 1 adds ferretdbVersion;
// FerretDB 2 a ferretdb document, or a ferretdbVersion of 2.x. version
// is the version reported there, "" when none is (it may be "unknown").
func Release(reply bson.Raw) (release int, version string) {
	if v, ok := reply.Lookup("ferretdbVersion").StringValueOK(); ok {
		if strings.HasPrefix(strings.TrimPrefix(v, "v"), "2.") {
			return 2, v
		}
		return 1, v
	}
	if doc, ok := reply.Lookup("ferretdb").DocumentOK(); ok {
		v, _ := bson.Raw(doc).Lookup("version").StringValueOK()
		return 2, v
	}
	return 0, ""
}
