package ferretserve

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startClient starts a server with its data in dir and connects a client
// to it; both are stopped when the test ends (the client first).
func startClient(t *testing.T, dir string) *mongo.Client {
	t.Helper()
	s, err := Start(dir, "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(10 * time.Second) })
	c, err := mongo.Connect(options.Client().ApplyURI(s.URI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}
