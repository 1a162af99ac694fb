package leadermongo_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/internal/latewrite"
	"github.com/go-dsync/dsync/internal/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// Regression tests for writes applied long after their sender gave up on
// them (see internal/chain's package documentation, "Writes that land
// late").

func newLeaderBackend(t *testing.T, db *mongo.Database) *leadermongo.Backend {
	t.Helper()
	b, err := leadermongo.New(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// routed is a leader backend whose renewals go through a latewrite.Router.
type routed struct {
	*leadermongo.Backend
	r *latewrite.Router
}

func (x routed) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	return x.r.RenewSession(ctx, session, ttl)
}

// TestLateRenewalDoesNotMakeTwoLeaders: leader A's session renewal stalls,
// A gives up on it, later renewals succeed, then A's renewals fail and the
// stalled one lands. Applied with $set it would move the session's expiry
// back, and B would be elected before A's leadership context is cancelled.
func TestLateRenewalDoesNotMakeTwoLeaders(t *testing.T) {
	const ttl, interval = 3 * time.Second, time.Second
	db := mongotest.NewDatabase(t)
	link := latewrite.NewLink(t, db)
	dbB := mongotest.SameDatabase(t, db)
	direct := newLeaderBackend(t, db)
	other := newLeaderBackend(t, dbB)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := link.DB.Client().Ping(ctx, nil); err != nil { // connects before the stall
		t.Fatal(err)
	}
	router := latewrite.NewRouter(direct, link.DB.Collection(leadermongo.DefaultCollection+"_sessions"), 300*time.Millisecond)
	quiet := leader.WithLogger(slog.New(slog.DiscardHandler))
	opts := []leader.Option{leader.WithTTL(ttl), leader.WithRenewInterval(interval), quiet}
	a, err := leader.NewElection(routed{direct, router}, "late", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := leader.NewElection(other, "late", opts...)
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
	if n, err := db.Collection(leadermongo.DefaultCollection+"_sessions").CountDocuments(ctx,
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
// that has left look alive.
func TestLateMemberWriteChangesNothing(t *testing.T) {
	db := mongotest.NewDatabase(t)
	link := latewrite.NewLink(t, db)
	direct := newLeaderBackend(t, db)
	late := newLeaderBackend(t, link.DB)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := late.ServerTime(ctx); err != nil {
		t.Fatal(err)
	}
	const election = "members"
	// The members index is created by the first write: before the stall.
	if err := late.PutMember(ctx, election, leader.Member{ID: "m0"}); err != nil {
		t.Fatal(err)
	}
	if err := late.DeleteMember(ctx, election, "m0"); err != nil {
		t.Fatal(err)
	}
	link.Stall()
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if err := late.PutMember(sctx, election, leader.Member{ID: "m1", Host: "h", PID: 1, Leader: false}); err == nil {
		t.Fatal("PutMember through a stalled link succeeded")
	}
	stalled, err := link.AwaitKept(ctx, "update")
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.PutMember(ctx, election, leader.Member{ID: "m1", Host: "h", PID: 1, Leader: true}); err != nil {
		t.Fatal(err)
	}
	before := members(t, direct, election, time.Minute)
	// Refused: the filter does not match the later write, and the upsert
	// cannot insert the same _id again.
	if _, err := latewrite.Replay(ctx, db, stalled); !mongo.IsDuplicateKeyError(err) {
		t.Errorf("delivering the stalled write over a later one: %v; want a duplicate key error", err)
	}
	after := members(t, direct, election, time.Minute)
	if len(after) != 1 || !after[0].Leader || !after[0].LastSeen.Equal(before[0].LastSeen) {
		t.Errorf("after a stale write landed, members = %+v; want them unchanged: %+v", after, before)
	}

	// A stale write landing after the member left brings back a document
	// no fresher than when the write was sent.
	time.Sleep(1500 * time.Millisecond) // server time must pass: the age is judged in it
	if err := direct.DeleteMember(ctx, election, "m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := latewrite.Replay(ctx, db, stalled); err != nil {
		t.Fatalf("delivering the stalled write: %v", err)
	}
	if ms := members(t, direct, election, time.Second); len(ms) != 0 {
		t.Errorf("a member that left is listed as seen within the last second after a stale write: %+v", ms)
	}
}

func members(t *testing.T, b *leadermongo.Backend, election string, maxAge time.Duration) []leader.Member {
	t.Helper()
	ms, err := b.Members(context.Background(), election, maxAge)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
