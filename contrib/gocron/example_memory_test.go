package dsyncgocron_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// Two replicas' schedulers tick for the job "report" at once: gocron
// calls each one's Locker, one runs the tick, and the other skips it.
// The replicas share an in-memory store here, as they would a database.
func ExampleLocker_Lock() {
	store := memory.New()
	replica := func() (*dsyncgocron.Locker, *dsync.Client) {
		locks, err := dsync.NewClient(store.Process())
		if err != nil {
			log.Fatal(err)
		}
		locker, err := dsyncgocron.NewLocker(locks, time.Minute)
		if err != nil {
			log.Fatal(err)
		}
		return locker, locks
	}
	a, locksA := replica()
	defer locksA.Close()
	b, locksB := replica()
	defer locksB.Close()
	ctx := context.Background()

	lock, err := a.Lock(ctx, "report")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a runs the tick")
	_, err = b.Lock(ctx, "report")
	fmt.Println("b skips it, the job runs elsewhere:", errors.Is(err, dsyncgocron.ErrRunning))
	if err := lock.Unlock(ctx); err != nil { // gocron unlocks when the run ends
		log.Fatal(err)
	}
	// Output:
	// a runs the tick
	// b skips it, the job runs elsewhere: true
}
