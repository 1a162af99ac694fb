package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-dsync/dsync/dsync/driver"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// offlineDB is a database on a client that never reaches a server: New
// and argument checks must not need one.
func offlineDB(t *testing.T) *mongo.Database {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1/?connectTimeoutMS=200").
		SetServerSelectionTimeout(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c.Database("offline")
}

func TestNewRejectsBadArguments(t *testing.T) {
	if _, err := NewStore(nil); !errors.Is(err, ErrNilDatabase) {
		t.Errorf("NewStore(nil) = %v, want ErrNilDatabase", err)
	}
	db := offlineDB(t)
	for _, tc := range []struct {
		name string
		opt  any
	}{
		{"nil option", Option(nil)},
		{"empty collection", WithCollection("")},
		{"collection with $", WithCollection("a$b")},
		{"system collection", WithCollection("system.locks")},
		{"nil write concern", WithWriteConcern(nil)},
		{"w:0", WithWriteConcern(writeconcern.Unacknowledged())},
		{"nil clock", WithClock(nil)},
		{"nil logger", WithLogger(nil)},
		{"negative drift", WithMaxDrift(-1e-6)},
		{"huge drift", WithMaxDrift(0.5)},
		{"inconsistent protocol constants", withChain(queue.Config{ViewTrust: time.Second, AcquireWindow: time.Second, PruneDelay: time.Second})},
	} {
		if b, err := newTestClient(db, tc.opt); err == nil {
			t.Errorf("%s: New succeeded (%v), want an error", tc.name, b)
		} else if !strings.HasPrefix(err.Error(), "dsyncmongo: ") {
			t.Errorf("%s: error %q lacks the package prefix", tc.name, err)
		}
	}
	b, err := newTestClient(db, WithCollection("locks"), WithWriteConcern(writeconcern.W1()),
		dsync.ClientWithPollInterval(time.Second), WithMaxDrift(1e-4))
	if err != nil {
		t.Fatalf("New with valid options: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestBadKeysAreRejectedBeforeIO(t *testing.T) {
	b := newBackend(t, offlineDB(t))
	ctx := testCtx(t, 5*time.Second)
	for _, tc := range []struct {
		key  string
		want error
	}{
		{"", ErrEmptyKey},
		{strings.Repeat("k", MaxKeyLen+1), ErrKeyTooLong},
		{"bad\xffutf8", ErrInvalidKey},
	} {
		start := time.Now()
		if _, err := b.raw.Claim(ctx, tc.key, "owner", "s", false); !errors.Is(err, tc.want) {
			t.Errorf("Claim(%.20q) = %v, want %v", tc.key, err, tc.want)
		}
		if err := b.raw.End(ctx, queue.Ref{Key: tc.key, Owner: "owner", Epoch: 1, Nonce: "n"}, true); !errors.Is(err, tc.want) {
			t.Errorf("End(%.20q) = %v, want %v", tc.key, err, tc.want)
		}
		if err := b.raw.Await(ctx, queue.Ref{Key: tc.key, Owner: "owner", Epoch: 1, Nonce: "n"}); !errors.Is(err, tc.want) {
			t.Errorf("Await(%.20q) = %v, want %v", tc.key, err, tc.want)
		}
		if _, err := b.Current(ctx, tc.key); !errors.Is(err, tc.want) {
			t.Errorf("Current(%.20q) = %v, want %v", tc.key, err, tc.want)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("rejecting %.20q took %v: it waited for the server", tc.key, d)
		}
	}
	if _, err := b.raw.Claim(ctx, "k", "o", "", false); err == nil {
		t.Error("Claim without a session succeeded")
	}
	if _, err := b.raw.OpenSession(ctx, 0); err == nil {
		t.Error("OpenSession with zero TTL succeeded")
	}
	if err := b.raw.End(ctx, queue.Ref{Key: "k", Owner: "o"}, true); err == nil {
		t.Error("End of a claim without token and nonce succeeded")
	}
}

func TestUnreachableServerIsAnError(t *testing.T) {
	b := newBackend(t, offlineDB(t))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := b.raw.OpenSession(ctx, time.Second); err == nil {
		t.Fatal("OpenSession against no server succeeded")
	} else {
		t.Logf("OpenSession error: %v", err)
	}
	if err := b.raw.RenewSession(ctx, "s", time.Second); err == nil || errors.Is(err, dsync.ErrSessionGone) {
		t.Errorf("RenewSession against no server = %v, want an error of unknown outcome", err)
	}
}

// open opens a session on b.
func open(t *testing.T, ctx context.Context, b *testClient, ttl time.Duration) string {
	t.Helper()
	s, err := b.raw.OpenSession(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claimed claims key and reports whether it holds at once (one walk).
func claimed(t *testing.T, ctx context.Context, b *testClient, key, owner, session string) queue.Ref {
	t.Helper()
	c, err := b.raw.Claim(ctx, key, owner, session, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// holdsWithin reports whether Await returns within d.
func holdsWithin(ctx context.Context, b *testClient, c queue.Ref, d time.Duration) bool {
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return b.raw.Await(actx, c) == nil
}

// TestQueueHoldsInClaimOrder: claims hold in epoch order, one at a time; a
// withdrawn claim is skipped; tokens are the epochs.
func TestQueueHoldsInClaimOrder(t *testing.T) {
	t.Parallel()
	ps := newProcs(t, 4)
	ctx := testCtx(t, time.Minute)
	var cs []queue.Ref
	for i, p := range ps {
		s := open(t, ctx, p.b, time.Minute)
		cs = append(cs, claimed(t, ctx, p.b, "k", fmt.Sprintf("p%d", i), s))
	}
	for i, c := range cs {
		if c.Epoch != cs[0].Epoch+uint64(i) {
			t.Fatalf("claim %d has token %d, want %d", i, c.Epoch, cs[0].Epoch+uint64(i))
		}
	}
	if !holdsWithin(ctx, ps[0].b, cs[0], 5*time.Second) {
		t.Fatal("the first claim does not hold")
	}
	for _, i := range []int{1, 2, 3} {
		if holdsWithin(ctx, ps[i].b, cs[i], 300*time.Millisecond) {
			t.Fatalf("claim %d holds while claim 0 holds", i)
		}
	}
	// p2 gives up; p0 releases: p1 holds, p3 still waits for p1.
	if err := ps[2].b.raw.End(ctx, cs[2], false); err != nil {
		t.Fatal(err)
	}
	if err := ps[0].b.raw.End(ctx, cs[0], true); err != nil {
		t.Fatal(err)
	}
	if !holdsWithin(ctx, ps[1].b, cs[1], 5*time.Second) {
		t.Fatal("the second claim does not hold after the first was released")
	}
	if holdsWithin(ctx, ps[3].b, cs[3], 300*time.Millisecond) {
		t.Fatal("the last claim holds while the second holds")
	}
	if info, err := ps[3].b.Current(ctx, "k"); err != nil || info.Token != cs[1].Epoch || info.Owner != "p1" {
		t.Fatalf("Current = %+v, %v; want p1's claim %d", info, err, cs[1].Epoch)
	}
	if err := ps[1].b.raw.End(ctx, cs[1], true); err != nil {
		t.Fatal(err)
	}
	if !holdsWithin(ctx, ps[3].b, cs[3], 5*time.Second) {
		t.Fatal("the last claim does not hold after the withdrawn one was skipped")
	}
}

// TestTryClaimNeverQueues: a try claim holds at once or returns a
// HeldError naming the holder, and leaves nothing in the queue.
func TestTryClaimNeverQueues(t *testing.T) {
	t.Parallel()
	ps := newProcs(t, 2)
	ctx := testCtx(t, time.Minute)
	sa, sb := open(t, ctx, ps[0].b, time.Minute), open(t, ctx, ps[1].b, time.Minute)
	a, err := ps[0].b.raw.Claim(ctx, "k", "alice", sa, true)
	if err != nil {
		t.Fatalf("TryClaim of a free key = %v", err)
	}
	var held *dsync.HeldError
	if _, err := ps[1].b.raw.Claim(ctx, "k", "bob", sb, true); !errors.As(err, &held) || held.Owner != "alice" || held.Token != a.Epoch {
		t.Fatalf("TryClaim of a held key = %v, want a HeldError naming alice's token %d", err, a.Epoch)
	}
	if err := ps[0].b.raw.End(ctx, a, true); err != nil {
		t.Fatal(err)
	}
	b, err := ps[1].b.raw.Claim(ctx, "k", "bob", sb, true)
	if err != nil {
		t.Fatalf("TryClaim after the release = %v: the failed try left something in the queue", err)
	}
	if b.Epoch <= a.Epoch {
		t.Errorf("token %d after %d", b.Epoch, a.Epoch)
	}
}

// TestTakeoverAfterSessionExpiryOnly: a claim whose session stops being
// renewed blocks the queue until the session has expired in server time;
// then the next claim holds, and the dead claim is marked so that a late
// renewal of its session cannot bring it back. The processes have no
// outage grace: nothing here renews a session (the calls are the
// engine's), so no record of up-time could prove alice's session dead.
func TestTakeoverAfterSessionExpiryOnly(t *testing.T) {
	ps := newProcs(t, 3, dsync.ClientWithOutageGrace(0))
	ctx := testCtx(t, time.Minute)
	const ttl = time.Second
	warmUp(ctx, t, ps[1].b) // start the waiter's estimator outside the timing
	sent := time.Now()
	sa := open(t, ctx, ps[0].b, ttl)
	a := claimed(t, ctx, ps[0].b, "k", "alice", sa)
	if !holdsWithin(ctx, ps[0].b, a, 5*time.Second) {
		t.Fatal("alice's claim does not hold")
	}
	b := claimed(t, ctx, ps[1].b, "k", "bob", open(t, ctx, ps[1].b, time.Minute))
	if err := ps[1].b.raw.Await(ctx, b); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(sent)
	t.Logf("bob holds %v after alice's session was opened (TTL %v)", waited.Round(time.Millisecond), ttl)
	if waited < ttl {
		t.Fatalf("bob holds after %v, before alice's session can have expired", waited)
	}
	if waited > ttl+2*time.Second {
		t.Errorf("bob holds only after %v", waited)
	}
	dead := false
	for _, d := range docs(t, ps[2].db, "k") {
		dead = dead || d.Kind == queue.KindDead && d.Epoch == int64(a.Epoch)
	}
	if !dead {
		t.Fatalf("alice's claim was not marked dead: %+v", docs(t, ps[2].db, "k"))
	}
	// Alice's renewal arrives now, late: the session document is extended,
	// but the dead claim stays ended for every reader.
	if err := ps[0].b.raw.RenewSession(ctx, sa, time.Minute); err != nil {
		t.Fatalf("late renewal: %v", err)
	}
	if info, err := ps[2].b.Current(ctx, "k"); err != nil || info.Owner != "bob" || info.Token != b.Epoch {
		t.Fatalf("after alice's late renewal, Current = %+v, %v; want bob's claim %d", info, err, b.Epoch)
	}
	var held *dsync.HeldError
	if _, err := ps[2].b.raw.Claim(ctx, "k", "carol", open(t, ctx, ps[2].b, time.Minute), true); !errors.As(err, &held) || held.Owner != "bob" {
		t.Fatalf("carol's try = %v, want held by bob", err)
	}
}

// notClock filters out the sessions collection's server-time document.
var notClock = bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: clockID}}}}

func TestWithCollection(t *testing.T) {
	db := mongotest.NewDatabase(t)
	b := newBackend(t, db, WithCollection("my_locks"))
	ctx := testCtx(t, 30*time.Second)
	claimed(t, ctx, b, "k", "alice", open(t, ctx, b, time.Minute))
	// The claim and its shadow, the three gates its segment started with
	// and the protocol document; the session.
	for name, want := range map[string]int64{"my_locks": 6, "my_locks" + sessionsSuffix: 1, DefaultCollection: 0, DefaultCollection + sessionsSuffix: 0} {
		if n, err := db.Collection(name).CountDocuments(ctx, notClock); err != nil || n != want {
			t.Errorf("collection %s holds %d documents (%v), want %d", name, n, err, want)
		}
	}
}

func TestCurrent(t *testing.T) {
	ps := newProcs(t, 2)
	b := ps[0].b
	ctx := testCtx(t, 30*time.Second)
	if _, err := b.Current(ctx, "k"); !errors.Is(err, errNoLock) {
		t.Fatalf("Current of a fresh key = %v, want errNoLock", err)
	}
	before := time.Now()
	c := claimed(t, ctx, b, "k", "alice", open(t, ctx, b, time.Minute))
	w := claimed(t, ctx, ps[1].b, "k", "bob", open(t, ctx, ps[1].b, time.Minute))
	info, err := ps[1].b.Current(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "k" || info.Token != c.Epoch || info.Owner != "alice" || !info.Live ||
		info.Host != b.s.cfg.host || info.PID != b.s.cfg.pid {
		t.Errorf("Current = %+v, want alice's claim %d", info, c.Epoch)
	}
	// Server and local clocks agree here within seconds.
	if d := info.ExpiresAt.Sub(before); d < 50*time.Second || d > 70*time.Second {
		t.Errorf("ExpiresAt %v is %v after the claim, want about a minute", info.ExpiresAt, d)
	}
	if d := info.AcquiredAt.Sub(before); d < -5*time.Second || d > 5*time.Second {
		t.Errorf("AcquiredAt %v is %v from the claim", info.AcquiredAt, d)
	}
	if err := b.raw.End(ctx, c, true); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Current(ctx, "k"); err != nil || info.Owner != "bob" || info.Token != w.Epoch {
		t.Errorf("after the release Current = %+v, %v; want bob's waiting claim, now the head", info, err)
	}
	if err := ps[1].b.raw.End(ctx, w, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Current(ctx, "k"); !errors.Is(err, errNoLock) {
		t.Errorf("Current after every claim ended = %v, want errNoLock", err)
	}
}

func TestCloseStopsTheBackend(t *testing.T) {
	ps := newProcs(t, 1)
	b := ps[0].b
	ctx := testCtx(t, 30*time.Second)
	s := open(t, ctx, b, time.Second)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.raw.Claim(ctx, "k", "o", s, false); !errors.Is(err, dsync.ErrClosed) {
		t.Errorf("Claim after Close = %v, want ErrClosed", err)
	}
	if err := b.raw.RenewSession(ctx, s, time.Second); !errors.Is(err, dsync.ErrClosed) {
		t.Errorf("RenewSession after Close = %v, want ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestRenewalIsOneCommandForAnyNumberOfClaims: a session renewal is one
// findAndModify by _id, whatever the number of claims in the session.
func TestRenewalIsOneCommandForAnyNumberOfClaims(t *testing.T) {
	t.Parallel()
	p := newProcs(t, 1)[0]
	ctx := testCtx(t, time.Minute)
	s := open(t, ctx, p.b, time.Minute)
	for i := range 200 {
		claimed(t, ctx, p.b, fmt.Sprintf("k%d", i), "o", s)
	}
	waitRecorded(t, ctx, p.db, 200)
	p.cmd.take()
	if err := p.b.raw.RenewSession(ctx, s, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := p.cmd.take(); lockOps(n) != 1 || n["findAndModify"] != 1 {
		t.Fatalf("renewing a session of 200 claims sent %v, want one findAndModify", n)
	}
	if err := p.b.raw.RenewSession(ctx, "no-such-session", time.Minute); !errors.Is(err, dsync.ErrSessionGone) {
		t.Fatalf("renewing an unknown session = %v, want ErrSessionGone", err)
	}
}

// fastPrune makes pruning happen within a test: buckets of a second,
// whose gates' floors are pruned below 50 ms after the next bucket began.
// Leases must then be at most a second.
var fastPrune = withChain(func() queue.Config {
	c := queue.DefaultConfig()
	c.ViewTrust, c.AcquireWindow = 10*time.Millisecond, 15*time.Millisecond
	c.PruneDelay = 50 * time.Millisecond
	c.Span, c.Quantum, c.Margin = time.Second, 50*time.Millisecond, 200*time.Millisecond
	return c
}())

// cycle claims key, waits until it holds and releases it.
func cycle(t *testing.T, ctx context.Context, b *testClient, key, owner, session string) uint64 {
	t.Helper()
	c := claimed(t, ctx, b, key, owner, session)
	if err := b.raw.Await(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := b.raw.End(ctx, c, true); err != nil {
		t.Fatal(err)
	}
	return c.Epoch
}

// TestPruneKeepsTheFirstEpochAndTheTop: a key in use sheds its history:
// its claims and markers below the floor of a gate a bucket old are
// deleted, lowest first, but the segment's first epoch, and never the
// newest. The key is cycled for four buckets at least, and until the
// prunes have caught up with all but the last quarter of its claims
// (a loaded machine cycles unevenly, and a prune that fails only keeps
// history longer), within a minute. A busy machine can let the
// process's coverage of the key lapse (fastPrune's buckets are a
// second): its next claim then starts a segment, whose history the
// prunes of the new one do not reach; the trial starts again on a new
// key then.
func TestPruneKeepsTheFirstEpochAndTheTop(t *testing.T) {
	t.Parallel()
	p := newProcs(t, 1, fastPrune)[0]
	ctx := testCtx(t, 2*time.Minute)
	const tries = 10
	for try := range tries {
		if pruneTrial(t, ctx, p, fmt.Sprintf("k%d", try)) {
			return
		}
	}
	t.Fatalf("coverage lapsed in each of %d trials: no key stayed in one segment", tries)
}

// pruneTrial is one trial of TestPruneKeepsTheFirstEpochAndTheTop on
// key; it reports false if the key's claims left its first segment.
func pruneTrial(t *testing.T, ctx context.Context, p *proc, key string) bool {
	t.Helper()
	s := open(t, ctx, p.b, time.Second) // at most fastPrune's bucket span
	segment := func(epoch uint64) uint64 { return epoch / queue.DefaultConfig().Rate }
	var first, last uint64
	var claims map[int64]bool
	var others int
	n := 0
	start := time.Now()
	for {
		last = cycle(t, ctx, p.b, key, "o", s)
		if n == 0 {
			first = last
		}
		if segment(last) != segment(first) {
			t.Logf("%s: a segment began after %d cycles (%d, then %d): coverage lapsed", key, n, first, last)
			return false
		}
		n++
		if time.Since(start) >= 4*time.Second && n%10 == 0 {
			claims, others = history(t, p.db, key)
			if len(claims) <= n*3/4 {
				break
			}
			if time.Since(start) > time.Minute {
				t.Fatalf("%d claims kept after %d cycles over %v: the prunes do not keep up", len(claims), n, time.Since(start).Round(time.Second))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !claims[int64(first)] || !claims[int64(last)] {
		t.Fatalf("claims %v: want the first epoch %d and the newest %d kept", claims, first, last)
	}
	// What is left above the first epoch is a run up to the newest: the
	// prunes went from the bottom up.
	low := int64(last)
	for claims[low-1] {
		low--
	}
	if len(claims) != int(int64(last)-low+1)+1 {
		t.Errorf("claims %v: want the first epoch %d and a run up to %d, nothing else", claims, first, last)
	}
	if others > 2*len(claims) {
		t.Errorf("%d shadows and markers for %d claims left", others, len(claims))
	}
	t.Logf("%d cycles in %v: claims of epochs %d and %d..%d kept, %d shadows and markers", n, time.Since(start).Round(time.Millisecond), first, low, last, others)
	return true
}

func history(t *testing.T, db *mongo.Database, key string) (claims map[int64]bool, others int) {
	t.Helper()
	claims = map[int64]bool{}
	for _, d := range docs(t, db, key) {
		switch d.Kind {
		case driver.KindClaim:
			claims[d.Epoch] = true
		case driver.KindShadow, driver.KindRelease, driver.KindWithdraw, driver.KindDead:
			others++
		}
	}
	return claims, others
}

// TestStaleKnowledgeIsCaughtByTheFloor: a process whose knowledge of a key
// is old (it last claimed the segment's second epoch, and withdrew it)
// claims the key after another has gone far ahead and pruned, having
// learned only the gate that covers the key now: the gate's floor tells it
// that what it knows is pruned, and it claims above the floor. Ignoring the floor (the planted bug),
// its insert of the third epoch lands in the pruned hole and holds with a
// token below those already handed out. (Had it released its claim, its
// insert would carry that release again and find it pruned.)
func TestStaleKnowledgeIsCaughtByTheFloor(t *testing.T) {
	t.Parallel()
	for _, bug := range []queue.Bug{queue.NoBug, queue.BugNoFloorProof} {
		t.Run(fmt.Sprintf("bug=%d", bug), func(t *testing.T) {
			if bug != queue.NoBug && !queue.Planted {
				t.Skip("planting a bug needs -tags dsync_planted")
			}
			ps := newProcs(t, 2, fastPrune)
			ctx := testCtx(t, time.Minute)
			stale, busy := newBackend(t, ps[0].db, fastPrune, withBug(bug)), ps[1].b
			ss, sb := open(t, ctx, stale, time.Second), open(t, ctx, busy, time.Second)
			first := cycle(t, ctx, stale, "k", "stale", ss)
			if c := claimed(t, ctx, stale, "k", "stale", ss); c.Epoch != first+1 {
				t.Fatalf("second claim got token %d, want %d", c.Epoch, first+1)
			} else if err := stale.raw.End(ctx, c, false); err != nil {
				t.Fatal(err)
			}
			var top uint64
			for start := time.Now(); time.Since(start) < 3500*time.Millisecond; {
				top = cycle(t, ctx, busy, "k", "busy", sb)
				time.Sleep(10 * time.Millisecond)
			}
			if _, found, err := stale.s.Get(ctx, queue.ClaimID("k", first+1)); err != nil || found {
				t.Fatalf("the claim of epoch %d: found %v, %v; want it pruned", first+1, found, err)
			}
			// The stale process learns the gate that covers the key now (a
			// look at its queue as a claimer's walk makes it: a Client's
			// Queue only reads, and learns nothing), and with it the floor,
			// but nothing newer of the key's epochs.
			if err := stale.raw.Look(ctx, "k"); err != nil {
				t.Fatalf("Look = %v", err)
			}
			got := cycle(t, ctx, stale, "k", "stale", ss)
			switch {
			case bug == queue.NoBug && got <= top:
				t.Fatalf("the stale process held token %d after token %d was handed out", got, top)
			case bug == queue.BugNoFloorProof && got > top:
				t.Fatalf("with the floor proof off, the stale claim still got token %d > %d: the test no longer reaches the hole", got, top)
			}
			t.Logf("stale process held token %d after %d", got, top)
		})
	}
}

func TestSkewedClientClocksExcludeEachOther(t *testing.T) {
	t.Parallel()
	// Without an outage grace: the sessions here are opened one by one and
	// renewed by no one, so no renewal would prove the store up after the
	// holder's expiry, and the grace would hold the key for its length.
	noGrace := dsync.ClientWithOutageGrace(0)
	ahead := newProcs(t, 1, WithClock(skewClock{time.Hour}), noGrace)[0]
	behind := &proc{cmd: &counter{}}
	behind.db = mongotest.SameDatabase(t, ahead.db, behind.cmd.monitor())
	behind.b = newBackend(t, behind.db, WithClock(skewClock{-time.Hour}), noGrace)
	ctx := testCtx(t, time.Minute)
	const ttl = time.Second

	for _, tc := range []struct {
		name           string
		holder, waiter *proc
	}{
		{"ahead holds, behind waits", ahead, behind},
		{"behind holds, ahead waits", behind, ahead},
	} {
		key := strings.ReplaceAll(tc.name, " ", "-")
		// Warm up the waiter's estimator outside the timed part.
		_, _ = tc.waiter.b.Current(ctx, key)
		sent := time.Now()
		h := claimed(t, ctx, tc.holder.b, key, "holder", open(t, ctx, tc.holder.b, ttl))
		w := claimed(t, ctx, tc.waiter.b, key, "waiter", open(t, ctx, tc.waiter.b, time.Minute))
		if err := tc.waiter.b.raw.Await(ctx, w); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		waited := time.Since(sent)
		t.Logf("%s: taken over after %v (TTL %v)", tc.name, waited.Round(time.Millisecond), ttl)
		if waited < ttl {
			t.Errorf("%s: taken over after %v, before the TTL", tc.name, waited)
		}
		// A skew taken for time would show as an hour; a busy machine
		// adds seconds.
		if waited > ttl+30*time.Second {
			t.Errorf("%s: taken over only after %v", tc.name, waited)
		}
		if w.Epoch <= h.Epoch {
			t.Errorf("%s: token %d after %d", tc.name, w.Epoch, h.Epoch)
		}
	}
}
