package leadermongo_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// Proclaimed values on MongoDB: Leader shows the last one confirmed, and
// a member write that lands late (an older sequence, an older value or an
// ended term) changes nothing; a new term starts from WithValue's value.
func TestProclaimOnMongo(t *testing.T) {
	db := mongotest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))
	pa := newElections(t, db, dsync.ClientWithTTL(3*time.Second))
	a, err := leader.NewElection(pa.c, "p", quiet, leader.WithMembers(pa.members), leader.WithValue("a0"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	pb := newElections(t, mongotest.SameDatabase(t, db), dsync.ClientWithTTL(3*time.Second))
	b, err := leader.NewElection(pb.c, "p", quiet, leader.WithMembers(pb.members), leader.WithValue("b0"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	want := func(value string, rev uint64) leader.Info {
		t.Helper()
		info, err := b.Leader(ctx)
		if err != nil || info.ID != a.ID() || info.Value != value || info.Rev != rev {
			t.Fatalf("Leader = %+v, %v; want %s's %q rev %d", info, err, a.ID(), value, rev)
		}
		return info
	}
	first := want("a0", 0)
	for i, v := range []string{"a1", "a2"} {
		if err := a.Proclaim(ctx, v); err != nil {
			t.Fatal(err)
		}
		want(v, uint64(i+1))
	}
	if err := b.Proclaim(ctx, "b1"); !errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("Proclaim by a standby = %v", err)
	}
	// A write of a's that lands late: a generation of its own, an older
	// sequence number, the first proclamation.
	members := db.Collection(leadermongo.DefaultMembersCollection)
	if _, err := members.InsertOne(ctx, bson.D{
		{Key: "_id", Value: "p/" + a.ID() + "~0"}, {Key: "election", Value: "p"}, {Key: "member", Value: a.ID()},
		{Key: "leader", Value: true}, {Key: "lastSeen", Value: time.Now()}, {Key: "seq", Value: int64(0)},
		{Key: "value", Value: "a0"}, {Key: "term", Value: int64(first.Token)}, {Key: "proclaimed", Value: "a1"}, {Key: "rev", Value: int64(1)},
	}); err != nil {
		t.Fatal(err)
	}
	want("a2", 2)
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := a.Leader(ctx)
	if err != nil || info.ID != b.ID() || info.Value != "b0" || info.Rev != 0 || info.Token <= first.Token {
		t.Fatalf("Leader after the handover = %+v, %v", info, err)
	}
}
