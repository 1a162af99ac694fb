package leadertest_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// A test gives one MemoryMembers to every Election, as processes share
// one database, and cuts it off with SetReachable.
func ExampleMemoryMembers() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	members := leadertest.NewMemoryMembers()
	e, err := leader.NewElection(client, "billing", leader.WithMembers(members), leader.WithValue("10.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Campaign(context.Background()); err != nil {
		log.Fatal(err)
	}
	info, err := e.Leader(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader's value:", info.Value)

	members.SetReachable(false)
	_, err = e.Members(context.Background())
	fmt.Println("unreachable:", errors.Is(err, leadertest.ErrUnreachable))
	// Output:
	// leader's value: 10.0.0.1:8080
	// unreachable: true
}
