package dsyncmongo

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestUptimeCommands: RenewSessionUp is RenewSession's findAndModify with
// "up" and "v" set, and stores what it returns; RenewSession sets neither
// (today's renewals are unchanged); ReadUptime is one find at majority
// read concern.
func TestUptimeCommands(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, time.Minute)
	var (
		mu   sync.Mutex
		sent = make(map[string][]bson.Raw) // commands by name
	)
	mon := options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		sent[e.CommandName] = append(sent[e.CommandName], e.Command)
	}})
	db := mongotest.NewDatabase(t, mon)
	s := newBackend(t, db).s
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	take := func(name string) []bson.Raw {
		mu.Lock()
		defer mu.Unlock()
		got := sent[name]
		sent = make(map[string][]bson.Raw)
		return got
	}
	exp := s.ServerTime().Latest.Add(time.Minute).Truncate(time.Millisecond)
	if err := s.InsertSession(ctx, driver.Session{ID: "c0000000000000000001", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if found, err := s.RenewSession(ctx, "c0000000000000000001", 0, exp); err != nil || !found {
		t.Fatalf("RenewSession = %v, %v", found, err)
	}
	for _, c := range take("findAndModify") {
		if _, err := c.LookupErr("update", "$set"); err == nil {
			t.Errorf("RenewSession sent %v: want no $set", c)
		}
	}

	span := driver.UpSpan{From: exp.Add(-2 * time.Minute), To: exp.Add(-90 * time.Second)}
	applied, found, err := s.RenewSessionUp(ctx, "c0000000000000000001", 0, exp, []driver.UpSpan{span})
	if err != nil || !found {
		t.Fatalf("RenewSessionUp = %v, %v, %v", applied, found, err)
	}
	var stored sessionDoc
	if err := s.sessions.coll.FindOne(ctx, bson.D{{Key: "_id", Value: "c0000000000000000001"}}).Decode(&stored); err != nil {
		t.Fatal(err)
	}
	if stored.V != upVersion || len(stored.Up) != 1 || !stored.Up[0].From.Equal(span.From) || !stored.Up[0].To.Equal(span.To) ||
		!stored.Seen.Equal(applied) {
		t.Errorf("stored %+v after RenewSessionUp (stamp %v); want v %d, up [%v], seen the stamp", stored, applied, upVersion, span)
	}
	take("find")
	if _, err := s.ReadUptime(ctx, span.From); err != nil {
		t.Fatal(err)
	}
	finds := take("find")
	if len(finds) != 1 {
		t.Fatalf("ReadUptime sent %d finds, want 1", len(finds))
	}
	if level, _ := finds[0].Lookup("readConcern", "level").StringValueOK(); level != "majority" {
		t.Errorf("ReadUptime's find %v: read concern %q, want majority", finds[0], level)
	}
}
