package leader_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

func ExampleElection_Campaign() {
	// In production: a Client over dsyncmongo.NewStore(db), and member
	// status in leadermongo.NewStore(store).
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	members := leadertest.NewMemoryMembers()
	e, err := leader.NewElection(client, "billing", leader.WithMembers(members))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	lctx, err := e.Campaign(context.Background()) // blocks until this process leads
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading:", e.IsLeader())

	// ... leader-only work under lctx; it is cancelled if leadership is lost ...

	if err := e.Resign(context.Background()); err != nil {
		log.Fatal(err)
	}
	<-lctx.Done()
	fmt.Println("cause:", context.Cause(lctx))
	// Output:
	// leading: true
	// cause: leader: resigned
}

// Several leader-only jobs share one leadership through an errgroup: when
// leadership is lost, the group's context is cancelled, every job stops,
// and Run campaigns again. A job that fails for its own reasons ends Run
// with its error.
func ExampleElection_Run() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := leader.NewElection(client, "scheduler") // no member status needed
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	errDone := errors.New("work done")
	err = e.Run(context.Background(), func(lctx context.Context) error {
		g, gctx := errgroup.WithContext(lctx)
		g.Go(func() error { return compactTables(gctx) })
		g.Go(func() error { return sendReports(gctx) })
		if err := g.Wait(); err != nil {
			return err
		}
		return errDone // a real singleton job would loop until gctx ends
	})
	fmt.Println(err)
	// Unordered output:
	// tables compacted
	// reports sent
	// work done
}

func compactTables(ctx context.Context) error {
	fmt.Println("tables compacted")
	return ctx.Err()
}

func sendReports(ctx context.Context) error {
	fmt.Println("reports sent")
	return ctx.Err()
}

func ExampleElection_Observe() {
	// In production: a Client over dsyncmongo.NewStore(db), and member
	// status in leadermongo.NewStore(store).
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	members := leadertest.NewMemoryMembers()
	candidate, _ := leader.NewElection(client, "cron", leader.WithMembers(members), leader.WithVersion("v2.1.0"))
	defer candidate.Close()
	watcher, _ := leader.NewElection(client, "cron", leader.WithMembers(members))
	defer watcher.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaders := watcher.Observe(ctx) // needs no campaign of its own

	if _, err := candidate.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	info := <-leaders
	fmt.Println("leader runs", info.Version, "with a token:", info.Token > 0)
	// Output:
	// leader runs v2.1.0 with a token: true
}

// The leader advertises where it serves (WithValue), and moves without a
// new election (Proclaim); others read it with Leader or Observe. Inside
// Run, TermOf gives the term's token, to fence what the leader writes.
func ExampleElection_Proclaim() {
	client, err := dsync.NewClient(memory.New())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	members := leadertest.NewMemoryMembers()
	e, err := leader.NewElection(client, "primary", leader.WithMembers(members), leader.WithValue("10.0.0.7:5432"))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	err = e.Run(context.Background(), func(lctx context.Context) error {
		term, _ := leader.TermOf(lctx)
		fmt.Println("leading with a token:", term.Token > 0, "serving at", term.Value)
		if err := e.Proclaim(lctx, "10.0.0.8:5432"); err != nil {
			return err
		}
		info, err := e.Leader(lctx)
		if err != nil {
			return err
		}
		fmt.Println("others see", info.Value, "rev", info.Rev)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// leading with a token: true serving at 10.0.0.7:5432
	// others see 10.0.0.8:5432 rev 1
}

func ExampleElection_Transfer() {
	store, members := memory.New(), leadertest.NewMemoryMembers()
	var clients []*dsync.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	candidate := func() *leader.Election {
		client, err := dsync.NewClient(store)
		if err != nil {
			log.Fatal(err)
		}
		clients = append(clients, client)
		e, err := leader.NewElection(client, "primary", leader.WithMembers(members))
		if err != nil {
			log.Fatal(err)
		}
		return e
	}
	e, successor := candidate(), candidate()
	defer e.Close()
	defer successor.Close()
	ctx := context.Background()
	lctx, err := e.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	led := make(chan struct{})
	go func() {
		if _, err := successor.Campaign(ctx); err == nil {
			close(led)
		}
	}()

	for !isMember(ctx, e, successor.ID()) {
		time.Sleep(10 * time.Millisecond) // until the successor's status is in
	}

	if err := e.Transfer(ctx, successor.ID()); err != nil {
		log.Print(err) // still leading, unless ErrNotLeader
	}

	<-led
	fmt.Println("old term:", context.Cause(lctx))
	// Output:
	// old term: leader: leadership transferred
}

// isMember reports whether id is a live member of e's election.
func isMember(ctx context.Context, e *leader.Election, id string) bool {
	ms, err := e.Members(ctx)
	return err == nil && slices.ContainsFunc(ms, func(m leader.Member) bool { return m.ID == id })
}
