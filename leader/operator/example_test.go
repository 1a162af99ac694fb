package operator_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/leader/operator"
)

// Drain a Partition member, then undrain it: each is a new directive, of
// the next generation, so a drain that lands late cannot undo the undrain.
func ExampleDrain() {
	ctx := context.Background()
	// In production: leadermongo.NewStore(store), the Partition's own.
	members := leadertest.NewMemoryMembers()

	d, err := operator.Drain(ctx, members, "mailer", "worker-2", true, "ops@host", "disk failing")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Key())
	if _, err := operator.Drain(ctx, members, "mailer", "worker-2", false, "ops@host", "disk replaced"); err != nil {
		log.Fatal(err)
	}
	ds, err := members.Directives(ctx, "mailer")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ds), "directives, drained:", operator.Drained(ds))
	// Output:
	// #drain/worker-2/1
	// 2 directives, drained: map[]
}

func ExampleLockKey() {
	fmt.Println(operator.LockKey("mailer#0"))
	// Output: dsync:election/mailer#0
}
