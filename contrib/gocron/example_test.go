package dsyncgocron_test

import (
	"context"
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
	"github.com/go-dsync/dsync/dsync"
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
	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store)
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
// lease's TTL if it dies: the ticks of that TTL are missed. The default
// TTL (15 s) suits jobs a minute or more apart; for jobs every second
// or few, shorten it as here.
func ExampleNewElector() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store, dsync.ClientWithTTL(3*time.Second)) // a leader's crash misses at most about 3 s of ticks
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()
	members, err := leadermongo.NewStore(store)
	if err != nil {
		log.Fatal(err)
	}
	e, err := leader.NewElection(locks, "scheduler", leader.WithMembers(members))
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
	_, err = s.NewJob(gocron.DurationJob(time.Second),
		gocron.NewTask(func() { log.Println("leader-only work, every second") }))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	// ... serve until asked to stop.
}

// A robfig/cron job that runs once per scheduled time across replicas:
// a JobWrapper that runs the job inside a dsync.Once for its name and
// the nearest slot. The other replicas' Do waits while the run goes on
// and returns without running it.
func Example_robfigCron() {
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

	// onceEach runs the wrapped job once per scheduled time across replicas.
	onceEach := func(name string, slot time.Duration) cron.JobWrapper {
		return func(j cron.Job) cron.Job {
			return cron.FuncJob(func() {
				at := time.Now().Add(slot / 2).Truncate(slot).UTC() // the nearest slot
				o, err := dsync.NewOnce(locks, name+"/"+at.Format(time.RFC3339), dsync.WithForgetAfter(time.Hour))
				if err == nil {
					err = o.Do(context.Background(), func(context.Context) error { j.Run(); return nil })
				}
				if err != nil {
					log.Printf("%s at %v: %v", name, at, err)
				}
			})
		}
	}
	c := cron.New() // a spec's times are whole minutes; "@every 1m" counts from each replica's start
	_, err = c.AddJob("* * * * *", cron.NewChain(onceEach("report", time.Minute)).Then(cron.FuncJob(func() { log.Println("report") })))
	if err != nil {
		log.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	// ... serve until asked to stop.
}
