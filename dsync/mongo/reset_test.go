package dsyncmongo

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// The collections emptied or restored under running processes, while no
// lock is held: processes that keep what they learned before must not
// hold on it. Each test fails on a dsync whose engine trusts its cache
// (the release it made itself, an idle session it kept).

// lockCollections are the collections a reset empties: the lock
// collection and its sessions.
func lockCollections(db *mongo.Database) []*mongo.Collection {
	return []*mongo.Collection{db.Collection(DefaultCollection), db.Collection(DefaultCollection + sessionsSuffix)}
}

// snapshot reads every document of the lock collections, for restore.
func snapshot(t *testing.T, ctx context.Context, db *mongo.Database) [][]bson.Raw {
	t.Helper()
	var all [][]bson.Raw
	for _, c := range lockCollections(db) {
		cur, err := c.Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		all = append(all, docs)
	}
	return all
}

// restore empties the lock collections and, if snap is not nil, puts its
// documents back, as restoring a backup would.
func restore(t *testing.T, ctx context.Context, db *mongo.Database, snap [][]bson.Raw) {
	t.Helper()
	for i, c := range lockCollections(db) {
		if _, err := c.DeleteMany(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		if snap == nil || len(snap[i]) == 0 {
			continue
		}
		docs := make([]any, len(snap[i]))
		for j, d := range snap[i] {
			docs[j] = d
		}
		if _, err := c.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
}

// lockUnlock locks and unlocks m n times.
func lockUnlock(m *dsync.Mutex, n int) {
	for range n {
		m.Lock()
		//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
		m.Unlock()
	}
}

// mustNotLockWhile checks that m cannot lock within d while another
// process holds (other's token is shown in the failure).
func mustNotLockWhile(t *testing.T, m *dsync.Mutex, d time.Duration, other uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := m.LockContext(ctx); err == nil {
		t.Fatalf("two holders: locked with token %d while another process holds token %d", m.Token(), other)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext while another process holds: %v, want the deadline", err)
	}
}

// TestEmptiedStoreNeverGivesTwoHolders: P held and released "job"; the
// collections were emptied while nothing was held; Q, a new process, locks
// "job" and gets a token above P's (a new segment's, from the store's
// time); P, which knows that every epoch up to its own release ended,
// must not hold beside Q.
func TestEmptiedStoreNeverGivesTwoHolders(t *testing.T) {
	t.Parallel()
	ps := newProcs(t, 2, dsync.ClientWithTTL(3*time.Second))
	ctx := testCtx(t, time.Minute)
	p := newMutex(t, ps[0].b.Client, "job")
	q := newMutex(t, ps[1].b.Client, "job")
	lockUnlock(p, 1)
	p.Lock()
	before := p.Token()
	p.Unlock()
	// Tokens after an emptying lie above those handed out more than the
	// margin (a second) before it (the new segment's base comes from the
	// store's time).
	time.Sleep(1200 * time.Millisecond)
	restore(t, ctx, ps[0].db, nil)
	q.Lock()
	if q.Token() <= before {
		t.Fatalf("Q's token in the emptied store = %d, want above P's %d", q.Token(), before)
	}
	mustNotLockWhile(t, p, 1500*time.Millisecond, q.Token())
	q.Unlock()
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := p.LockContext(lctx); err != nil {
		t.Fatalf("P after Q released: %v", err)
	}
	if p.Token() <= 1 {
		t.Errorf("P's token %d after Q's 1", p.Token())
	}
	p.Unlock()
}

// TestEmptiedSessionsNeverGiveTwoHolders: only the sessions collection is
// emptied, while P keeps its idle session for its next Lock. P locks in
// it; another process must not take P's claim for dead while P holds: it
// takes over only after P's Lost() has closed.
func TestEmptiedSessionsNeverGiveTwoHolders(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	ps := newProcs(t, 2, dsync.ClientWithTTL(ttl))
	ctx := testCtx(t, time.Minute)
	p := newMutex(t, ps[0].b.Client, "job")
	q := newMutex(t, ps[1].b.Client, "job")
	sessions := ps[0].db.Collection(DefaultCollection + sessionsSuffix)
	// A renewal of P's idle session that lands between the emptying and
	// P's Lock finds the session gone and retires it, and P then locks in
	// a new session, which is valid: Q rightly waits. That round did not
	// set the scene (a loaded machine makes it likelier), so it is played
	// again; P's Lock in the vanished session leaves no session document.
	const rounds = 5
	for round := 1; ; round++ {
		p.Lock()
		//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
		p.Unlock()
		if _, err := sessions.DeleteMany(ctx, notClock); err != nil {
			t.Fatal(err)
		}
		p.Lock()
		n, err := sessions.CountDocuments(ctx, notClock)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if round == rounds {
			t.Fatalf("P locked in a new session in each of %d rounds: its renewals always noticed the emptying first", rounds)
		}
		t.Logf("round %d: P's renewal noticed the emptying before its Lock (it holds in a new session); again", round)
		p.Unlock()
	}
	lost := p.Lost()
	qHeld := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		qHeld <- q.LockContext(lctx)
	}()
	select {
	case err := <-qHeld:
		t.Fatalf("Q locked (%v, token %d) while P held token %d", err, q.Token(), p.Token())
	case <-lost:
	}
	if err := <-qHeld; err != nil {
		t.Fatalf("Q after P lost its hold: %v", err)
	}
	if err := p.UnlockContext(ctx); !errors.Is(err, dsync.ErrLost) {
		t.Errorf("P's Unlock after its session vanished: %v, want ErrLost", err)
	}
	q.Unlock()
}

// TestRestoredStoreNeverGivesTwoHolders: the collections are restored from
// a backup taken two holds earlier, while P, idle, keeps what it knew (the
// documentation asks for the processes to be stopped; this is the part of
// running through a restore that a cache alone would break). Q, new, gets
// the backup's next token (restoring a backup repeats tokens handed out
// after it, within the backup's segment); P, which knows of later epochs,
// must not hold beside it.
func TestRestoredStoreNeverGivesTwoHolders(t *testing.T) {
	t.Parallel()
	ps := newProcs(t, 2, dsync.ClientWithTTL(3*time.Second))
	ctx := testCtx(t, time.Minute)
	p := newMutex(t, ps[0].b.Client, "job")
	q := newMutex(t, ps[1].b.Client, "job")
	p.Lock()
	first := p.Token()
	p.Unlock()
	lockUnlock(p, 1)
	backup := snapshot(t, ctx, ps[0].db)
	lockUnlock(p, 2)
	restore(t, ctx, ps[0].db, backup)
	q.Lock()
	if q.Token() != first+2 {
		t.Fatalf("Q's token after the restore = %d, want %d (the backup's next)", q.Token(), first+2)
	}
	mustNotLockWhile(t, p, 1500*time.Millisecond, q.Token())
	q.Unlock()
}

// TestIdleProcessResendsItsWithdrawal: a waiter gives up (its context
// ends) and its withdrawal fails; the process then goes idle, so no
// renewal comes to send the withdrawal again. It must still land soon:
// otherwise the orphan claim keeps the key waiting until the idle
// session expires (TTL 10 s here).
func TestIdleProcessResendsItsWithdrawal(t *testing.T) {
	fault, calls := faults("end", errUnauthorized)
	const ttl = 10 * time.Second
	h := newProcs(t, 1, dsync.ClientWithTTL(ttl))[0]
	w := &proc{cmd: &counter{}}
	w.db = mongotest.SameDatabase(t, h.db, w.cmd.monitor())
	w.b = newBackend(t, w.db, withFault(fault), dsync.ClientWithTTL(ttl))
	x := &proc{cmd: &counter{}}
	x.db = mongotest.SameDatabase(t, h.db, x.cmd.monitor())
	x.b = newBackend(t, x.db, dsync.ClientWithTTL(ttl))
	mh := newMutex(t, h.b.Client, "k")
	mw := newMutex(t, w.b.Client, "k")
	mx := newMutex(t, x.b.Client, "k")
	mh.Lock()
	// The waiter gives up once its claim is queued behind the holder's
	// (a fixed timeout could end before the claim was even inserted on a
	// busy machine, leaving nothing to withdraw).
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		for wctx.Err() == nil {
			if q, err := statuspage.NewReader(h.b.Client).Queue(wctx, "k"); err == nil && len(q) >= 2 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	if err := mw.LockContext(wctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter's LockContext = %v, want it cancelled", err)
	}
	if calls() == 0 {
		t.Fatal("the waiter's withdrawal was never attempted")
	}
	mh.Unlock()
	xctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := mx.LockContext(xctx); err != nil {
		t.Fatalf("a third process after the holder released: %v (the waiter's withdrawal did not land: %d end attempts)", err, calls())
	}
	t.Logf("locked %v after the release; the waiter's process sent %d ends", time.Since(start).Round(time.Millisecond), calls())
	mx.Unlock()
}
