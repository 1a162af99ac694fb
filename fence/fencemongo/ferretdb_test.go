package fencemongo

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/fakewire"
)

// Fence refuses every release of FerretDB, however its buildInfo says
// so: a FerretDB 2 may mark its reply with a ferretdb document alone, and
// is refused as one that reports a ferretdbVersion is. A server with
// neither is taken for MongoDB, and not refused.
func TestFenceRefusesEachFerretDBReply(t *testing.T) {
	for _, c := range []struct {
		name      string
		buildInfo bson.D
		refused   bool
	}{
		{"FerretDB 1", bson.D{{Key: "ferretdbVersion", Value: "v1.24.0"}}, true},
		{"FerretDB 2, ferretdbVersion", bson.D{{Key: "ferretdbVersion", Value: "v2.1.0"}}, true},
		{"FerretDB 2, ferretdb document", bson.D{{Key: "ferretdb", Value: bson.D{{Key: "version", Value: "v2.5.0"}}}}, true},
		{"MongoDB", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + fakewire.BuildInfo(t, c.buildInfo) + "/?directConnection=true"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
			_, err = Fence(testCtx(t, 30*time.Second), client.Database("t").Collection("c"), 1)
			if refused := errors.Is(err, ErrFenceNotAtomic); refused != c.refused {
				t.Errorf("Fence: %v; refused as FerretDB: %v, want %v", err, refused, c.refused)
			}
		})
	}
}
