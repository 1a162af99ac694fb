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

// ExampleCheck and ExampleEstimator need a MongoDB server, so they are
// compiled but not run; ExampleWithProbe runs.

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

// A probe reads the server's clock where hello would not report the
// clock that matters; here it stands in for a server whose clock is ten
// minutes ahead of this host's, so the check refuses.
func ExampleWithProbe() {
	aheadServer := func(ctx context.Context) (time.Time, error) {
		return time.Now().Add(10 * time.Minute), nil // one round trip to the server
	}
	_, err := clockcheck.Check(context.Background(), nil, clockcheck.DefaultMaxOffset, clockcheck.WithProbe(aheadServer))
	var oe *clockcheck.OffsetError
	if errors.As(err, &oe) {
		fmt.Printf("refusing to run: the clock is %v behind the server's (limit %v)\n", oe.Offset.Round(time.Minute), oe.Limit)
	}
	// Output:
	// refusing to run: the clock is 10m0s behind the server's (limit 500ms)
}
