package leadermongo_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// TestReadingAnElectionOnlyReads: who leads an election and its members
// (Election.Leader, Election.Members: what dsync status and the status
// page show) are read with commands a user with MongoDB's read role may
// send; on a database nothing has used they answer that nothing is there
// and create no collection. Members used to sample the server's clock
// through the lock store's Prepare, which creates the lock index and
// upserts the clock document. The embedded FerretDB enforces no roles, so
// the test checks the commands sent, with the driver's command monitor.
func TestReadingAnElectionOnlyReads(t *testing.T) {
	readRole := []string{"find", "getMore", "killCursors", "listCollections", "listIndexes",
		"hello", "isMaster", "ismaster", "buildInfo", "buildinfo", "ping", "endSessions"}
	var (
		mu   sync.Mutex
		sent []string
	)
	mon := options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(readRole, e.CommandName) {
			sent = append(sent, e.CommandName)
		}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db := mongotest.NewDatabase(t, mon)
	e := elect(t, newElections(t, db), "nightly")
	defer e.Close()

	if _, err := e.Leader(ctx); !errors.Is(err, leader.ErrNoLeader) {
		t.Errorf("Leader of an election nobody ran: %v, want ErrNoLeader", err)
	}
	if ms, err := e.Members(ctx); err != nil || len(ms) != 0 {
		t.Errorf("Members of an election nobody ran = %+v, %v; want none", ms, err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Errorf("after reading an election, the database's collections are %q; want none", names)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 0 {
		t.Errorf("reading an election sent %q; want only commands of the read role", sent)
	}
}
