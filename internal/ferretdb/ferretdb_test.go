package ferretdb_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/ferretdb"
)

// Release tells FerretDB 1 from 2 by either marker, and MongoDB by
// neither.
func TestRelease(t *testing.T) {
	for _, c := range []struct {
		reply   bson.D
		release int
		version string
	}{
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdbVersion", Value: "v1.24.0"}}, 1, "v1.24.0"},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdbVersion", Value: "unknown"}}, 1, "unknown"},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdbVersion", Value: "v2.1.0"}}, 2, "v2.1.0"},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.3.0"}}}}, 2, "v2.3.0"},
		{bson.D{{Key: "version", Value: "7.0.77"}, {Key: "ferretdb", Value: bson.D{}}}, 2, ""},
		{bson.D{{Key: "version", Value: "8.0.4"}}, 0, ""},
	} {
		raw, err := bson.Marshal(c.reply)
		if err != nil {
			t.Fatal(err)
		}
		if release, version := ferretdb.Release(raw); release != c.release || version != c.version {
			t.Errorf("Release(%v) = %d, %q; want %d, %q", c.reply, release, version, c.release, c.version)
		}
	}
	if release, version := ferretdb.Release(nil); release != 0 || version != "" {
		t.Errorf("Release(nil) = %d, %q; want 0 (a refused command)", release, version)
	}
}
