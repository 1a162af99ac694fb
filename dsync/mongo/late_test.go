package dsyncmongo

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/latewrite"
	"github.com/go-dsync/dsync/internal/mongotest"
)

// Regression tests for writes applied long after their sender gave up on
// them (timing.go, "Late writes"). Each one fails on the code before the
// rules L1–L4.

// TestLateRenewalDoesNotShortenTheHold: holder A's renewal R0 is sent and
// stalls; A gives up on it, and later renewals succeed. R0 then lands.
// Applied with $set, it moved the stored expiry back to R0's, and B took
// the lock while A's hold was still valid. Afterwards A's renewals fail
// (its network is down again), so the hold must stay exclusive until its
// own deadline, and B may take over only after A's Lost() has closed.
func TestLateRenewalDoesNotShortenTheHold(t *testing.T) {
	const ttl, interval = 3 * time.Second, time.Second
	ps := newProcs(t, 2)
	link := latewrite.NewLink(t, ps[0].db)
	late := newBackend(t, link.DB)
	ctx := testCtx(t, time.Minute)
	if _, err := late.ServerTime(ctx); err != nil { // prepared before the stall
		t.Fatal(err)
	}
	router := latewrite.NewRouter(ps[0].b, late, 300*time.Millisecond)
	a := newMutex(t, router, "late-renewal", dsync.WithTTL(ttl), dsync.WithRenewInterval(interval))
	b := newMutex(t, ps[1].b, "late-renewal", dsync.WithTTL(ttl))

	if err := a.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	// The renewal after the stalled one is sent late enough that the next
	// would come only after the stalled one's expiry: then nothing but A's
	// deadline protects the window in which that expiry is the stored one.
	r0Sent, err := router.RenewLate(ctx, link, ps[1].db, ttl-interval)
	if err != nil {
		t.Fatal(err)
	}

	for {
		if b.TryLock() {
			select {
			case <-a.Lost():
			default:
				t.Fatalf("B acquired token %d while A's hold (token %d, valid %v more) was valid", b.Token(), a.Token(), time.Until(a.ValidUntil()))
			}
			break
		}
		if time.Since(r0Sent) > 3*ttl {
			t.Fatal("B never acquired the lock after A's hold ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Unlock()
	if err := a.UnlockContext(ctx); err == nil {
		t.Error("A's UnlockContext after its deadline = nil, want ErrLost")
	}
}

// TestLateRenewalDoesNotPoisonTheViews: A's renewal stalls while A unlocks
// (Unlock waits for it); B takes over after the expiry, locks and unlocks
// until it has pruned the epoch after A's, and holds. Then A's renewal
// lands and is answered: it revives A's epoch (the store cannot refuse
// it), and it must not teach A's view cache that the epoch stayed the
// newest. It did: after its release, A inserted into the hole pruning had
// left and held a token below B's, at the same time.
func TestLateRenewalDoesNotPoisonTheViews(t *testing.T) {
	const ttl, interval = 4 * time.Second, 2500 * time.Millisecond
	const key = "late-view"
	db := mongotest.NewDatabase(t)
	link := latewrite.NewLink(t, db)
	ba := newBackend(t, link.DB)
	bb := newBackend(t, mongotest.SameDatabase(t, db))
	// Short timing constants that keep timing.go's inequality, so that B
	// prunes within the test and nothing but the late renewal can mislead.
	for _, be := range []*Backend{ba, bb} {
		be.cfg.viewTrust = 200 * time.Millisecond
		be.cfg.acquireWindow = 400 * time.Millisecond
		be.cfg.pruneDelay = 2 * (be.cfg.viewTrust + be.cfg.acquireWindow)
		be.cfg.pruneEvery = 2
	}
	ctx := testCtx(t, time.Minute)
	a := newMutex(t, ba, key, dsync.WithTTL(ttl), dsync.WithRenewInterval(interval))
	b := newMutex(t, bb, key, dsync.WithTTL(ttl))

	if err := a.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	first := a.Token()
	expiry := docs(t, db, key)[0].ExpiresAt
	link.Stall()
	if _, err := link.AwaitKept(ctx, "update"); err != nil {
		t.Fatal(err)
	}
	r0Sent := time.Now()
	unlocked := make(chan error, 1)
	go func() { unlocked <- a.UnlockContext(ctx) }()

	if err := b.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Hand the key over to itself until pruning has removed the epoch
	// after A's, then hold it.
	for time.Since(r0Sent) < ttl-500*time.Millisecond {
		b.Unlock()
		if err := b.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range docs(t, db, key) {
		if d.Epoch == int64(first)+1 {
			t.Fatalf("setup: epoch %d was not pruned (B holds %d)", d.Epoch, b.Token())
		}
	}

	link.Heal() // the renewal lands, and its reply arrives before A's call gives up
	if err := <-unlocked; err != nil {
		t.Fatalf("A's UnlockContext: %v", err)
	}
	if got := docs(t, db, key)[0]; !got.ExpiresAt.After(expiry) {
		t.Fatalf("the stalled renewal did not revive A's epoch (expiresAt %v, was %v): the fault did not happen", got.ExpiresAt, expiry)
	}
	if a.TryLock() {
		t.Errorf("A acquired token %d while B holds token %d", a.Token(), b.Token())
		a.Unlock()
	}
	b.Unlock()
}

// TestRenewalOfUnknownOutcomeIsNotTrusted: a renewal whose reply never
// came drops the views of its keys and marks its epochs, so their release
// reads them back.
func TestRenewalOfUnknownOutcomeIsNotTrusted(t *testing.T) {
	db := mongotest.NewDatabase(t)
	link := latewrite.NewLink(t, db)
	b := newBackend(t, link.DB)
	ctx := testCtx(t, time.Minute)
	lease, err := b.Acquire(ctx, "unknown", "alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.views.get("unknown"); !ok {
		t.Fatal("no view after the acquire")
	}
	link.Stall()
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := b.Renew(rctx, time.Minute, []dsync.Lease{lease}); err == nil {
		t.Fatal("Renew through a stalled link succeeded")
	}
	if _, ok := b.views.get("unknown"); ok {
		t.Error("the view of the key survived a renewal of unknown outcome")
	}
	if !b.unsure.take(docID("unknown", lease.Token)) {
		t.Error("the epoch of a renewal of unknown outcome was not noted")
	}
}

// TestReleaseUndoneByALateRenewalIsRepeated: on FerretDB an update rewrites
// the whole document, so a renewal of unknown outcome that is applied at
// the moment of the release can write the epoch back unreleased. Simulated
// here by writing it back right after the release's reply: the release
// must notice and release again, or the key stays blocked until expiry.
func TestReleaseUndoneByALateRenewalIsRepeated(t *testing.T) {
	undo := make(chan struct{}, 1)
	var other *mongo.Database
	c := &counter{}
	c.onSucceeded = func(e *event.CommandSucceededEvent) {
		if e.CommandName != "update" {
			return
		}
		select {
		case <-undo:
			_, err := other.Collection(DefaultCollection).UpdateOne(context.Background(),
				bson.D{{Key: "key", Value: "undone"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "released", Value: false}}}})
			if err != nil {
				t.Errorf("writing the epoch back: %v", err)
			}
		default:
		}
	}
	db := mongotest.NewDatabase(t, c.monitor())
	other = mongotest.SameDatabase(t, db)
	b := newBackend(t, db)
	ctx := testCtx(t, time.Minute)
	lease, err := b.Acquire(ctx, "undone", "alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b.unsure.note(docID("undone", lease.Token)) // as a failed renewal does
	undo <- struct{}{}
	if err := b.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if len(undo) != 0 {
		t.Fatal("the release sent no update")
	}
	if d := docs(t, db, "undone"); len(d) != 1 || !d[0].Released {
		t.Fatalf("after the release, the epoch reads %+v; want released", d)
	}
}
