package dsyncmongo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/event"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// A Client over the store tells its observer of a hold and its renewals
// on the real server.
func TestObserverOverTheStore(t *testing.T) {
	db := mongotest.NewDatabase(t)
	var mu sync.Mutex
	var acquired, released, renewed int
	store, err := dsyncmongo.NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dsync.NewClient(store, dsync.ClientWithTTL(3*time.Second), dsync.ClientWithObserver(event.Observer{
		Acquired: func(event.Acquisition) { mu.Lock(); acquired++; mu.Unlock() },
		Released: func(event.Held) { mu.Lock(); released++; mu.Unlock() },
		Renewed:  func(event.Renewal) { mu.Lock(); renewed++; mu.Unlock() },
	}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := dsync.NewMutex(b, "observed")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Renewed every second: wait for two renewals, as the observer sees
	// them. The TTL is long enough that a busy machine's late renewals
	// keep the hold, which the counts assume.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := renewed
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.Unlock()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if acquired != 1 || released != 1 || renewed < 2 {
		t.Errorf("observed %d acquired, %d released, %d renewed; want 1, 1, at least 2", acquired, released, renewed)
	}
}
