package lockset_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

func Example() {
	// In production the store is dsyncmongo.NewStore(db).
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()

	from, _ := dsync.NewMutex(client, "acct/9")
	to, _ := dsync.NewMutex(client, "acct/7")
	// Another transfer may name them the other way round: Sets never
	// deadlock, whatever the order.
	transfer, err := lockset.New(client, []lockset.Member{lockset.Mutex(from), lockset.Mutex(to)})
	if err != nil {
		panic(err)
	}
	transfer.Lock()
	tokens := transfer.Tokens() // in the order given: pass each with its write
	fmt.Println("tokens are the members':", tokens[0] == from.Token(), tokens[1] == to.Token())
	transfer.Unlock()
	// Output:
	// tokens are the members': true true
}

func ExampleSet_TryLockContext() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()

	busy, _ := dsync.NewMutex(client, "acct/7")
	busy.Lock()
	a, _ := dsync.NewMutex(client, "acct/3")
	b, _ := dsync.NewMutex(client, "acct/7")
	set, _ := lockset.New(client, []lockset.Member{lockset.Mutex(a), lockset.Mutex(b)})

	err = set.TryLockContext(context.Background())
	var held *dsync.HeldError
	fmt.Println("held elsewhere:", errors.As(err, &held), held.Key)
	fmt.Println("acct/3 free again:", a.TryLock()) // all or nothing: not kept
	a.Unlock()
	busy.Unlock()
	// Output:
	// held elsewhere: true acct/7
	// acct/3 free again: true
}

func ExampleSet_LockMore() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		panic(err)
	}
	defer client.Close()

	parent, _ := dsync.NewMutex(client, "dir/a")
	set, err := lockset.New(client, []lockset.Member{lockset.Mutex(parent)}, lockset.WithDeadlockTimeout(time.Second))
	if err != nil {
		panic(err)
	}
	set.Lock()
	// What else to lock is known only once "dir/a" is held.
	child, _ := dsync.NewMutex(client, "dir/a/b")
	err = set.LockMore(context.Background(), lockset.Mutex(child))
	if errors.Is(err, lockset.ErrDeadlock) {
		// The set was the youngest of a deadlock: it holds nothing now.
		// Start the work again from the top.
		return
	}
	if err != nil {
		set.Unlock()
		return
	}
	fmt.Println("tokens:", len(set.Tokens()))
	set.Unlock()
	// Output:
	// tokens: 2
}
