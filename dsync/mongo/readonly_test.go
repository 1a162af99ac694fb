package dsyncmongo

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// readRoleCommands are the commands a Client's reads may send: those
// MongoDB's built-in read role allows (find, getMore, killCursors,
// listCollections, listIndexes), and those that need no privilege
// (hello, isMaster, buildInfo, ping, endSessions).
var readRoleCommands = []string{"find", "getMore", "killCursors", "listCollections", "listIndexes",
	"hello", "isMaster", "ismaster", "buildInfo", "buildinfo", "ping", "endSessions"}

// sentCommands records the names of the commands a client sends.
type sentCommands struct {
	mu    sync.Mutex
	names []string
}

func (c *sentCommands) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.names = append(c.names, e.CommandName)
	}})
}

// notReads returns the commands sent since the last call that are not
// readRoleCommands, and forgets them all.
func (c *sentCommands) notReads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.names {
		if !slices.Contains(readRoleCommands, n) {
			out = append(out, n)
		}
	}
	c.names = nil
	return out
}

// TestClientReadsSendOnlyReads: a Client's reads (List, Queue, HasKey,
// ListOrder, Revocations, Stalls) send only commands a user with MongoDB's read
// role may send, never a create, createIndexes, insert or update; on a
// database nothing has used they answer that nothing is there and leave
// it without collections; and on one a writer uses they show its queues.
// They used to prepare the store first: create the lock index (creating
// the collection), sample the server's clock with an upsert, insert the
// protocol document and start the sweeper, which a read-only user is
// refused. The embedded FerretDB enforces no roles, so the test checks
// the commands sent, with the driver's command monitor.
func TestClientReadsSendOnlyReads(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	var sent sentCommands
	db := mongotest.NewDatabase(t, sent.monitor())
	reader := newBackend(t, db)
	collections := func() []string {
		t.Helper()
		names, err := db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	reads := func(key string) []statuspage.KeyState {
		t.Helper()
		var all []statuspage.KeyState
		for ks, err := range statuspage.NewReader(reader.Client).List(ctx, statuspage.ListOptions{}) {
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			all = append(all, ks)
		}
		if _, err := statuspage.NewReader(reader.Client).Queue(ctx, key); err != nil {
			t.Fatalf("Queue(%q): %v", key, err)
		}
		if _, err := statuspage.NewReader(reader.Client).HasKey(ctx, key); err != nil {
			t.Fatalf("HasKey(%q): %v", key, err)
		}
		if _, err := statuspage.NewReader(reader.Client).ListOrder(ctx); err != nil {
			t.Fatalf("ListOrder: %v", err)
		}
		if _, err := statuspage.NewReader(reader.Client).Revocations(ctx); err != nil {
			t.Fatalf("Revocations: %v", err)
		}
		if _, err := statuspage.NewReader(reader.Client).Stalls(ctx); err != nil {
			t.Fatalf("Stalls: %v", err)
		}
		return all
	}

	if all := reads("k"); len(all) != 0 {
		t.Errorf("List of an empty database = %+v, want nothing", all)
	}
	if q, err := statuspage.NewReader(reader.Client).Queue(ctx, "k"); err != nil || len(q) != 0 {
		t.Errorf("Queue of an empty database = %+v, %v; want none", q, err)
	}
	if ok, err := statuspage.NewReader(reader.Client).HasKey(ctx, "k"); err != nil || ok {
		t.Errorf("HasKey of an empty database = %v, %v; want false", ok, err)
	}
	if names := collections(); len(names) != 0 {
		t.Errorf("after reads of an empty database, its collections are %q; want none", names)
	}
	if w := sent.notReads(); len(w) != 0 {
		t.Errorf("reads of an empty database sent %q; want only commands of the read role", w)
	}

	// A writer holds a key; once its directory records it, the reader
	// lists it with its holder, still only reading.
	writer := newBackend(t, mongotest.SameDatabase(t, db))
	m, err := dsync.NewMutex(writer.Client, "held")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.UnlockContext(ctx) }()
	for {
		ok, err := statuspage.NewReader(writer.Client).HasKey(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the writer's key was never recorded in the directory")
		case <-time.After(10 * time.Millisecond):
		}
	}
	sent.notReads()
	all := reads("held")
	if len(all) != 1 || all[0].Key != "held" || len(all[0].Queue) != 1 || all[0].Queue[0].Token != m.Token() || !all[0].Queue[0].Holds {
		t.Errorf("List while the writer holds = %+v, want held, held with token %d", all, m.Token())
	}
	if w := sent.notReads(); len(w) != 0 {
		t.Errorf("reads of a database in use sent %q; want only commands of the read role", w)
	}

	// The reader's first claim prepares the store as ever.
	own, err := dsync.NewMutex(reader.Client, "reader's own")
	if err != nil {
		t.Fatal(err)
	}
	if err := own.LockContext(ctx); err != nil {
		t.Fatalf("a claim after reads: %v", err)
	}
	if err := own.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}
