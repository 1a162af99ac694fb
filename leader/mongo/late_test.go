package leadermongo_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/integration/latewrite"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// Regression tests for writes applied long after their sender gave up on
// them (see dsync/internal/queue's package documentation, "Writes that land
// late").

func newLeaderBackend(t *testing.T, db *mongo.Database, lockOpts ...any) *lproc {
	t.Helper()
	return newElections(t, db, lockOpts...)
}

// TestLateRenewalDoesNotMakeTwoLeaders: leader A's session renewal stalls,
// A gives up on it, later renewals succeed, then A's renewals fail and the
// stalled one lands. Applied with $set it would move the session's expiry
// back, and B would be elected before A's leadership context is cancelled.
func TestLateRenewalDoesNotMakeTwoLeaders(t *testing.T) {
	t.Parallel()
	const ttl, interval = 3 * time.Second, time.Second
	db := mongotest.NewDatabase(t)
	link := latewrite.NewLink(t, db)
	dbB := mongotest.SameDatabase(t, db)
	router := latewrite.NewRouter(link.DB.Collection(dsyncmongo.DefaultCollection+"_sessions"), 300*time.Millisecond)
	direct := newLeaderBackend(t, db, router.Over, dsync.ClientWithTTL(ttl), dsync.ClientWithRenewInterval(interval))
	other := newLeaderBackend(t, dbB, dsync.ClientWithTTL(ttl), dsync.ClientWithRenewInterval(interval))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := link.DB.Client().Ping(ctx, nil); err != nil { // connects before the stall
		t.Fatal(err)
	}
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))
	opts := []leader.Option{quiet}
	a, err := leader.NewElection(direct.c, "late", append(opts, leader.WithMembers(direct.members))...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := leader.NewElection(other.c, "late", append(opts, leader.WithMembers(other.members))...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	actx, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r0Sent, err := router.RenewLate(ctx, link, dbB, ttl-interval)
	if err != nil {
		t.Fatal(err)
	}

	// A's renewals after the stalled one went to its session's next
	// document: the stalled update may still be applied, after them.
	if n, err := db.Collection(dsyncmongo.DefaultCollection+"_sessions").CountDocuments(ctx,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "~1$"}}}}); err != nil || n != 1 {
		t.Errorf("%d sessions with a second document (%v), want A's", n, err)
	}

	bctx, err := b.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if actx.Err() == nil {
		t.Errorf("B was elected %v after the stalled renewal was sent while A still leads", time.Since(r0Sent))
	}
	if bctx.Err() != nil {
		t.Errorf("B's term ended at once: %v", context.Cause(bctx))
	}
}

// TestLateMemberWriteChangesNothing: a member's status write that lands
// after a later one must not turn its leader flag back, nor make a member
// that has left look alive. The stalled writes are an update of the
// member's document and the insert of another member's first one; the
// later write goes through another client (the stalled link holds back
// everything its client sends), as the member's next write would after an
// unknown outcome: to a new document of the member.
func TestLateMemberWriteChangesNothing(t *testing.T) {
	t.Parallel()
	db := mongotest.NewDatabase(t)
	link := latewrite.NewLink(t, db)
	direct := newLeaderBackend(t, db)
	late := newLeaderBackend(t, link.DB)
	link2 := latewrite.NewLink(t, db)
	late2 := newLeaderBackend(t, link2.DB)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const election = "members"
	// The member's first write inserts its document, and late's first
	// write creates the index: before the stall.
	if err := late.members.PutMember(ctx, election, leader.Member{ID: "m1", Host: "h", PID: 1, Leader: true}); err != nil {
		t.Fatal(err)
	}
	// late2 creates the index too (once per backend), on m0's write.
	if err := late2.members.PutMember(ctx, election, leader.Member{ID: "m0"}); err != nil {
		t.Fatal(err)
	}
	if err := late2.members.DeleteMember(ctx, election, "m0"); err != nil {
		t.Fatal(err)
	}
	link.Stall()
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if err := late.members.PutMember(sctx, election, leader.Member{ID: "m1", Host: "h", PID: 1, Leader: false}); err == nil {
		t.Fatal("PutMember through a stalled link succeeded")
	}
	stalledUpdate, err := link.AwaitKept(ctx, "update")
	if err != nil {
		t.Fatal(err)
	}
	// A stalled link lets one command through to be kept: m2 writes
	// through a link of its own.
	sctx, scancel = context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	link2.Stall()
	if err := late2.members.PutMember(sctx, election, leader.Member{ID: "m2", Host: "h", PID: 2}); err == nil {
		t.Fatal("PutMember through a stalled link succeeded")
	}
	stalledInsert, err := link2.AwaitKept(ctx, "insert")
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.members.PutMember(ctx, election, leader.Member{ID: "m1", Host: "h", PID: 1, Leader: true}); err != nil {
		t.Fatal(err)
	}
	before := members(t, direct, election, time.Minute)
	if len(before) != 1 || !before[0].Leader {
		t.Fatalf("members = %+v; want m1, leading", before)
	}
	reply, err := latewrite.Replay(ctx, db, stalledUpdate)
	if err != nil || reply["n"] != int32(1) {
		t.Fatalf("delivering the stalled update: %v, %v; want it applied to the member's older document", reply, err)
	}
	after := members(t, direct, election, time.Minute)
	if len(after) != 1 || !after[0].Leader || !after[0].LastSeen.Equal(before[0].LastSeen) {
		t.Errorf("after a stale write landed, members = %+v; want them unchanged: %+v", after, before)
	}

	// After the members left, the stale update brings nothing back, and
	// the stale insert a document no fresher than when it was sent.
	time.Sleep(1500 * time.Millisecond) // server time must pass: the age is judged in it
	for _, id := range []string{"m1", "m2"} {
		if err := direct.members.DeleteMember(ctx, election, id); err != nil {
			t.Fatal(err)
		}
	}
	if reply, err := latewrite.Replay(ctx, db, stalledUpdate); err != nil || reply["n"] != int32(0) {
		t.Errorf("delivering the stalled update again after the member left: %v, %v; want it to match nothing", reply, err)
	}
	if reply, err := latewrite.Replay(ctx, db, stalledInsert); err != nil || reply["n"] != int32(1) {
		t.Fatalf("delivering the stalled insert: %v, %v", reply, err)
	}
	if ms := members(t, direct, election, time.Minute); len(ms) != 1 || ms[0].ID != "m2" {
		t.Errorf("after the stale insert landed, members = %+v; want m2 back, stamped when it was sent", ms)
	}
	if ms := members(t, direct, election, time.Second); len(ms) != 0 {
		t.Errorf("a member that left is listed as seen within the last second after a stale write: %+v", ms)
	}
}

func members(t *testing.T, b *lproc, election string, maxAge time.Duration) []leader.Member {
	t.Helper()
	ms, err := b.members.Members(context.Background(), election, maxAge)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
