package clockcheck_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
)

// Refuse to start on a host whose clock is far from the database's.
func ExampleCheck() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())

	s, err := clockcheck.Check(ctx, client.Database("app"), clockcheck.DefaultMaxOffset)
	var oe *clockcheck.OffsetError
	switch {
	case errors.As(err, &oe):
		log.Fatalf("refusing to run: %v", err)
	case err != nil:
		log.Fatalf("cannot check the clock: %v", err)
	}
	fmt.Printf("clock within %v of the server's (offset %v ±%v)\n", clockcheck.DefaultMaxOffset, s.Offset, s.Uncertainty)
}

// Wait until a lease has certainly expired on the server's clock, whatever
// the local clock says.
func ExampleEstimator() {
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(ctx)

	est, err := clockcheck.NewEstimator(ctx, client.Database("app"))
	if err != nil {
		log.Fatal(err)
	}
	defer est.Close()

	// expiresAt would come from a lease document, in server time.
	expiresAt := est.Now().Latest.Add(2 * time.Second)
	for d := est.Until(expiresAt); d > 0; d = est.Until(expiresAt) {
		time.Sleep(d)
	}
	fmt.Println("expired:", !est.Now().Earliest.Before(expiresAt))
}
