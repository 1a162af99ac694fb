package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

func Example() {
	// In production the backend is dsyncmongo.New(db); the in-memory
	// backend follows the same protocol for unit tests.
	backend := dsync.NewMemoryBackend()

	mu, err := dsync.NewMutex(backend, "nightly-billing", dsync.WithTTL(10*time.Second))
	if err != nil {
		panic(err)
	}
	mu.Lock()
	fmt.Println("token:", mu.Token())
	mu.Unlock()

	mu.Lock()
	fmt.Println("token:", mu.Token())
	mu.Unlock()
	// Output:
	// token: 1
	// token: 2
}

func ExampleMutex_TryLock() {
	backend := dsync.NewMemoryBackend()
	a, _ := dsync.NewMutex(backend, "migrations")
	b, _ := dsync.NewMutex(backend, "migrations")

	fmt.Println("a:", a.TryLock())
	fmt.Println("b:", b.TryLock()) // another owner holds it: false at once
	a.Unlock()
	fmt.Println("b after a unlocked:", b.TryLock())
	b.Unlock()
	// Output:
	// a: true
	// b: false
	// b after a unlocked: true
}

func ExampleMutex_LockContext() {
	backend := dsync.NewMemoryBackend()
	holder, _ := dsync.NewMutex(backend, "report")
	holder.Lock()
	defer holder.Unlock()

	waiter, _ := dsync.NewMutex(backend, "report")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := waiter.LockContext(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
}

// A long critical section watches Lost and passes the fencing token to the
// resource it writes, so a write made after the lease ended is rejected.
func ExampleMutex_Lost() {
	backend := dsync.NewMemoryBackend()
	mu, _ := dsync.NewMutex(backend, "ledger")
	mu.Lock()
	defer mu.Unlock()

	for batch := range 3 {
		select {
		case <-mu.Lost():
			fmt.Println("lease lost: stop writing")
			return
		default:
		}
		writeBatch(batch, mu.Token())
	}
	// Output:
	// batch 0 written with token 1
	// batch 1 written with token 1
	// batch 2 written with token 1
}

func writeBatch(batch int, token uint64) {
	fmt.Printf("batch %d written with token %d\n", batch, token)
}
