package dsyncmongo

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/fakewire"
)

// TestDetectFerretDBAgrees: whether the store takes its server for
// FerretDB and which release it takes it for are one judgment of the
// buildInfo reply: a FerretDB 2 that marks its reply only with a ferretdb
// document is FerretDB, release 2, as one that reports a ferretdbVersion
// of 2.x is.
func TestDetectFerretDBAgrees(t *testing.T) {
	for _, c := range []struct {
		name      string
		buildInfo bson.D
		release   int
	}{
		{"MongoDB", nil, 0},
		{"FerretDB 1", bson.D{{Key: "ferretdbVersion", Value: "v1.24.0"}}, 1},
		{"FerretDB 1, version unknown", bson.D{{Key: "ferretdbVersion", Value: "unknown"}}, 1},
		{"FerretDB 2, ferretdbVersion", bson.D{{Key: "ferretdbVersion", Value: "v2.1.0"}}, 2},
		{"FerretDB 2, ferretdb document", bson.D{{Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.5.0"}}}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := newConfig(nil)
			if err != nil {
				t.Fatal(err)
			}
			client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + fakewire.BuildInfo(t, c.buildInfo) + "/?directConnection=true"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { client.Disconnect(testCtx(t, 10*time.Second)) })
			p := &platform{db: client.Database("t"), cfg: cfg}
			ferret, release, err := p.detectFerretDB(testCtx(t, 30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if ferret != (c.release != 0) || release != c.release {
				t.Errorf("detectFerretDB = FerretDB %v, release %d; want FerretDB %v, release %d", ferret, release, c.release != 0, c.release)
			}
		})
	}
}
