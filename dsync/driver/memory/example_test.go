package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// A unit test of code that takes a lock runs it on an in-memory store, as
// it would run on MongoDB.
func Example() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	mu, err := dsync.NewMutex(client, "nightly-billing")
	if err != nil {
		log.Fatal(err)
	}
	mu.Lock()
	fmt.Println("held, with a fencing token:", mu.Token() > 0)
	mu.Unlock()
	// Output:
	// held, with a fencing token: true
}

// Two processes share one store, each through a Process of its own; one
// is cut off from the store while the other goes on.
func ExampleStore_Process() {
	store := memory.New()
	a, b := store.Process(), store.Process()
	clientA, err := dsync.NewClient(a)
	if err != nil {
		log.Fatal(err)
	}
	defer clientA.Close()
	clientB, err := dsync.NewClient(b)
	if err != nil {
		log.Fatal(err)
	}
	defer clientB.Close()
	muA, _ := dsync.NewMutex(clientA, "migrations")
	muB, _ := dsync.NewMutex(clientB, "migrations")

	muA.Lock()
	fmt.Println("b while a holds:", muB.TryLock())

	a.SetReachable(false)
	other, _ := dsync.NewMutex(clientA, "reports")
	err = other.TryLockContext(context.Background())
	fmt.Println("a cut off:", errors.Is(err, memory.ErrUnreachable))
	fmt.Println("b goes on:", muB.TryLock())
	a.SetReachable(true)

	muA.Unlock()
	fmt.Println("b after a unlocked:", muB.TryLock())
	muB.Unlock()
	// Output:
	// b while a holds: false
	// a cut off: true
	// b goes on: false
	// b after a unlocked: true
}

// Intercept fails the calls a test picks out: here every write, as a
// store that went read-only would.
func ExampleStore_Intercept() {
	readOnly := errors.New("the store is read-only")
	store := memory.New().Intercept(func(ctx context.Context, c memory.Call, serve func() error) error {
		if c.Write {
			return readOnly
		}
		return nil
	})
	client, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	mu, _ := dsync.NewMutex(client, "migrations")
	err = mu.TryLockContext(context.Background())
	fmt.Println(errors.Is(err, readOnly))
	// Output:
	// true
}
