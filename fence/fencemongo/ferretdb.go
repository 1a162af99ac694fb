package fencemongo

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"weak"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/internal/ferretdb"
)

// ferretClients remembers, per driver client, whether its server is
// FerretDB, once a buildInfo has told; an entry goes with its client.
var ferretClients sync.Map // weak.Pointer[mongo.Client] → bool

// serverIsFerretDB reports whether db's server is FerretDB, asking it once
// per driver client. A server that refuses buildInfo counts as MongoDB;
// an error of the command itself (an unreachable server) is returned.
func serverIsFerretDB(ctx context.Context, db *mongo.Database) (bool, error) {
	client := db.Client()
	key := weak.Make(client)
	if v, ok := ferretClients.Load(key); ok {
		return v.(bool), nil
	}
	raw, err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	var se mongo.ServerError
	ferret := false
	switch {
	case err == nil:
		release, _ := ferretdb.Release(raw)
		ferret = release != 0
	case errors.As(err, &se) && ctx.Err() == nil:
	default:
		return false, err
	}
	if _, loaded := ferretClients.LoadOrStore(key, ferret); !loaded {
		runtime.AddCleanup(client, func(k weak.Pointer[mongo.Client]) { ferretClients.Delete(k) }, key)
	}
	return ferret, nil
}
