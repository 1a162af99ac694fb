package dsyncmongo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/mongotest"
)

// WithObserver reaches the Backend's Client: a hold and its renewals on
// the real server are observed.
func TestWithObserver(t *testing.T) {
	db := mongotest.NewDatabase(t)
	var mu sync.Mutex
	var acquired, released, renewed int
	b, err := dsyncmongo.New(db, dsyncmongo.WithObserver(dsync.Observer{
		Acquired: func(dsync.Acquisition) { mu.Lock(); acquired++; mu.Unlock() },
		Released: func(dsync.Held) { mu.Lock(); released++; mu.Unlock() },
		Renewed:  func(dsync.Renewal) { mu.Lock(); renewed++; mu.Unlock() },
	}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := dsync.NewMutex(b, "observed", dsync.WithTTL(900*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Renewed every 300 ms: wait for two renewals, as the observer sees them.
	deadline := time.Now().Add(10 * time.Second)
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

func TestWithObserverEmpty(t *testing.T) {
	db := mongotest.NewDatabase(t)
	if _, err := dsyncmongo.New(db, dsyncmongo.WithObserver(dsync.Observer{})); err == nil {
		t.Error("New accepted an observer with no callback")
	}
}
