package dsync_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// Readers share an RWMutex; a writer waits for them, and its token is
// above every earlier hold's.
func ExampleRWMutex() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	reader, _ := dsync.NewRWMutex(client, "config")
	writer, _ := dsync.NewRWMutex(client, "config") // another process, say

	reader.RLock()
	reader.RLock()         // readers share the key: a second read hold
	read := reader.Token() // the newest read hold's
	fmt.Println("writer while read:", writer.TryLock())
	reader.RUnlock()
	reader.RUnlock()

	writer.Lock()
	fmt.Println("reader while written:", reader.TryRLock())
	fmt.Println("the writer's token is above the readers':", writer.Token() > read)
	writer.Unlock()
	// Output:
	// writer while read: false
	// reader while written: false
	// the writer's token is above the readers': true
}

// A Semaphore bounds the units held at once across processes.
func ExampleSemaphore() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	a, _ := dsync.NewSemaphore(client, "transcoders", 3)
	b, _ := dsync.NewSemaphore(client, "transcoders", 3) // another process, say

	if err := a.Acquire(ctx, 2); err != nil {
		panic(err)
	}
	fmt.Println("b takes 2:", b.TryAcquire(2))
	fmt.Println("b takes 1:", b.TryAcquire(1))
	a.Release(2)
	fmt.Println("b takes 2 more:", b.TryAcquire(2))
	b.Release(3) // its acquisitions of 1 and 2
	fmt.Println(errors.Is(a.Acquire(ctx, 4), dsync.ErrOverLimit))
	// Output:
	// b takes 2: false
	// b takes 1: true
	// b takes 2 more: true
	// true
}

// Replicas that start at once run a migration once between them; each Do
// returns once it has run somewhere.
func ExampleOnce() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	migrate := func(ctx context.Context) error {
		_, fenced := dsync.TokenOf(ctx) // the token fences what the migration writes
		fmt.Println("migrating, fenced:", fenced)
		return nil
	}
	for range 3 { // three replicas, say
		once, _ := dsync.NewOnce(client, "migrate/2026-03-orders-index")
		if err := once.Do(ctx, migrate); err != nil {
			panic(err)
		}
	}
	once, _ := dsync.NewOnce(client, "migrate/2026-03-orders-index")
	done, _ := once.Done(ctx)
	fmt.Println("done:", done)
	// Output:
	// migrating, fenced: true
	// done: true
}
