package dsyncgocron_test

import (
	"context"
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// Every replica runs this scheduler; each minute's report runs on one of
// them. The cron expression puts the job's times on whole minutes, and
// the slot is one minute: ticks up to 30 s early or late count for their
// minute.
func ExampleNewLocker() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	locks, err := dsyncmongo.New(client.Database("app"))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	locker, err := dsyncgocron.NewLocker(locks, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.NewJob(gocron.CronJob("* * * * *", false),
		gocron.NewTask(func() { log.Println("the minute's report") }),
		gocron.WithName("report"))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	// ... serve until asked to stop.
}

// Every replica runs this scheduler; only the leader of the election
// "scheduler" runs its jobs, and another replica takes over within the
// lease's TTL if it dies.
func ExampleNewElector() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	locks, err := dsyncmongo.New(client.Database("app"))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	elections, err := leadermongo.New(locks)
	if err != nil {
		log.Fatal(err)
	}
	e, err := leader.NewElection(elections, "scheduler")
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	elector, err := dsyncgocron.NewElector(e)
	if err != nil {
		log.Fatal(err)
	}
	defer elector.Close()
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.NewJob(gocron.DurationJob(10*time.Second),
		gocron.NewTask(func() { log.Println("leader-only work") }))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	// ... serve until asked to stop.
}
