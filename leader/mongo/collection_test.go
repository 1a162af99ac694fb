package leadermongo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// TestMembersCollectionIgnoresCallersConcerns: the members collection is
// read at read concern local and written with the lock backend's write
// concern, whatever the client's settings (here read concern majority
// and w:1): under a caller's secondaryPreferred or majority reads, member
// lists would go stale or flap.
func TestMembersCollectionIgnoresCallersConcerns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []dsyncmongo.Option
		wantW string
	}{
		{"default", nil, `"majority"`},
		{"lock write concern", []dsyncmongo.Option{dsyncmongo.WithWriteConcern(writeconcern.Journaled())}, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				cmds []bson.Raw
			)
			monitor := options.Client().SetMonitor(&event.CommandMonitor{
				Started: func(_ context.Context, e *event.CommandStartedEvent) {
					if coll, ok := e.Command.Lookup(e.CommandName).StringValueOK(); ok && coll == leadermongo.DefaultMembersCollection {
						mu.Lock()
						cmds = append(cmds, append(bson.Raw(nil), e.Command...))
						mu.Unlock()
					}
				},
			})
			db := mongotest.NewDatabase(t, monitor, options.Client().
				SetReadPreference(readpref.SecondaryPreferred()).
				SetReadConcern(readconcern.Majority()).
				SetWriteConcern(writeconcern.W1()))
			b := newElections(t, db, anys(tc.opts)...)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			// The first write inserts the member's document, the second
			// updates it.
			for range 2 {
				if err := b.members.PutMember(ctx, "e", leader.Member{ID: "m", Host: "h", PID: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.members.Members(ctx, "e", time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := b.members.DeleteMember(ctx, "e", "m"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			seen := map[string]bool{}
			for _, c := range cmds {
				name := c.Index(0).Key()
				seen[name] = true
				switch name {
				case "find":
					if rc := c.Lookup("readConcern", "level").String(); rc != `"local"` {
						t.Errorf("find with read concern %s, want local: %v", rc, c)
					}
					if rp, err := c.LookupErr("$readPreference", "mode"); err == nil && rp.String() != `"primary"` {
						t.Errorf("find with read preference %s, want primary", rp)
					}
				case "insert", "update", "delete":
					if w, err := c.LookupErr("writeConcern", "w"); (err == nil) != (tc.wantW != "") || (err == nil && w.String() != tc.wantW) {
						t.Errorf("%s with write concern %v, want w %s", name, c.Lookup("writeConcern"), tc.wantW)
					}
					if j, _ := c.Lookup("writeConcern", "j").BooleanOK(); tc.wantW == "" && !j {
						t.Errorf("%s with write concern %v, want the lock backend's {j: true}", name, c.Lookup("writeConcern"))
					}
				}
			}
			if !seen["find"] || !seen["insert"] || !seen["update"] || !seen["delete"] {
				t.Errorf("commands on the members collection %v: want a find, an insert, an update and a delete", cmds)
			}
		})
	}
}
