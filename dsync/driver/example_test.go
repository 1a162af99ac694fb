package driver_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// countingStore wraps a driver by embedding its Store: every method and
// every role passes through, and it sees the calls it overrides.
type countingStore struct {
	driver.Store
	mu     sync.Mutex
	claims map[string]int
}

func (s *countingStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	s.mu.Lock()
	for _, d := range docs {
		if d.Kind == driver.KindClaim {
			s.claims[d.Key]++
		}
	}
	s.mu.Unlock()
	return s.Store.InsertOrdered(ctx, docs)
}

// A Store that wraps another to count the claims dsync sends: each hold
// of a key is one claim.
func Example() {
	store := &countingStore{Store: memory.New(), claims: map[string]int{}}
	client, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	mu, err := dsync.NewMutex(client, "migrations")
	if err != nil {
		log.Fatal(err)
	}
	holds := 0
	for range 3 {
		mu.Lock()
		holds++
		mu.Unlock()
	}
	client.Close()

	store.mu.Lock()
	fmt.Println("holds:", holds, "claims:", store.claims["migrations"])
	store.mu.Unlock()
	// Output:
	// holds: 3 claims: 3
}

// What every driver must keep: of two inserts of one ID, one succeeds and
// the other answers ErrExists, so only one claim of an epoch can exist.
func ExampleErrExists() {
	var store driver.Store = memory.New()
	ctx := context.Background()
	if err := store.Prepare(ctx); err != nil {
		log.Fatal(err)
	}
	claim := driver.Doc{ID: driver.ClaimID("migrations", 1), Key: "migrations", Epoch: 1, Kind: driver.KindClaim}
	fmt.Println("first:", store.Insert(ctx, claim))
	err := store.Insert(ctx, claim)
	fmt.Println("second exists:", errors.Is(err, driver.ErrExists))
	// Output:
	// first: <nil>
	// second exists: true
}
