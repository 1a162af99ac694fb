package leadermongo_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// The examples need a server, so they are compiled but not run.

// A scheduler that runs on one machine at a time: every instance runs
// this, one leads, the others stand by and take over within a TTL when
// it dies, and soon after it stops (Close resigns).
//
// The README's "Leader election" snippet is this example's imports and
// body; a test in package dsync checks that they stay the same.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())

	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store) // one per process: its locks and elections share one lease
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	members, err := leadermongo.NewStore(store) // member status in "dsync_members"
	if err != nil {
		log.Fatal(err)
	}

	e, err := leader.NewElection(locks, "scheduler", leader.WithMembers(members), leader.WithVersion("v1.4.2")) // shown by Leader and Members
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close() // resigns if leading; runs before locks.Close

	err = e.Run(ctx, func(lctx context.Context) error {
		g, gctx := errgroup.WithContext(lctx) // cancelled the moment leadership is lost
		g.Go(func() error { return compactTables(gctx) })
		g.Go(func() error { return sendReports(gctx) })
		return g.Wait()
	})
	if err != nil && ctx.Err() == nil { // not just Ctrl-C
		log.Print(err)
	}
}

// compactTables and sendReports stand for leader-only jobs: each runs
// until its context is cancelled.
func compactTables(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Hour):
			fmt.Println("tables compacted")
		}
	}
}

func sendReports(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Who leads, and who stands by, from an Election that does not campaign
// (what "dsync status" shows).
func Example_status() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	members, err := leadermongo.NewStore(store)
	if err != nil {
		log.Fatal(err)
	}
	watcher, err := leader.NewElection(locks, "scheduler", leader.WithMembers(members))
	if err != nil {
		log.Fatal(err)
	}
	defer watcher.Close()

	ctx := context.Background()
	info, err := watcher.Leader(ctx)
	switch {
	case errors.Is(err, leader.ErrNoLeader):
		fmt.Println("nobody leads")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Printf("%s on %s (pid %d, %s) leads since %v, token %d\n",
			info.ID, info.Host, info.PID, info.Version, info.Since, info.Token)
	}

	live, err := watcher.Members(ctx) // heard from within three heartbeats
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range live {
		fmt.Printf("%s on %s, %s, leader=%v, last seen %v\n", m.ID, m.Host, m.Version, m.Leader, m.LastSeen)
	}
}
