package chain_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/chain"
)

// stepClock is a clock the test moves by hand: exact server time, and
// local time counted from the start.
type stepClock struct {
	t0  time.Time
	now time.Duration
}

func (c *stepClock) ServerNow() chain.Interval {
	t := c.t0.Add(c.now)
	return chain.Interval{Earliest: t, Latest: t}
}
func (c *stepClock) Mono() time.Duration { return c.now }

// droppableSessions keeps the sessions apart from the memory store's
// documents, so that the test can empty the sessions collection alone
// (drop), lose a session write without applying it (lose), lose only the
// reply of one (lostReply), and run something while a session read is on
// its way back (onRead, after the read has landed).
type droppableSessions struct {
	*memory.Store
	sessions  map[string]map[int]time.Time
	lose      int // session writes to lose, unapplied
	lostReply int // session writes applied whose replies are lost
	onRead    func()
}

var errLost = errors.New("test: no reply")

func (s *droppableSessions) drop() { clear(s.sessions) }

func (s *droppableSessions) InsertSession(ctx context.Context, sess chain.Session) error {
	if s.lose > 0 {
		s.lose--
		return errLost
	}
	gens := s.sessions[sess.ID]
	if gens == nil {
		gens = make(map[int]time.Time)
		s.sessions[sess.ID] = gens
	}
	if _, ok := gens[sess.Gen]; ok {
		return chain.ErrExists
	}
	gens[sess.Gen] = sess.ExpiresAt
	return nil
}

func (s *droppableSessions) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	old, found := s.sessions[id][gen]
	if found && expires.After(old) {
		s.sessions[id][gen] = expires
	}
	if s.lostReply > 0 {
		s.lostReply--
		return false, errLost
	}
	return found, nil
}

func (s *droppableSessions) GetSession(ctx context.Context, id string) (chain.Session, bool, error) {
	sess, found := memory.LatestGen(id, s.sessions[id])
	if f := s.onRead; f != nil {
		s.onRead = nil
		f()
	}
	return sess, found, nil
}

// TestAbsenceRunCountsFromTheEarlierSend: a waiter takes a session whose
// documents are missing for dead only after a run of reads that found
// them missing, each replying within two TTLs of the send of the one
// before. Here the sessions collection is emptied twice, three TTLs and a
// little apart (what the documentation allows), and the owner re-creates
// its session in between, unseen: the waiter's first read landed before
// that and replied late, and its next read landed after the second
// emptying, less than two TTLs after that late reply. Counting from the
// reply, the waiter would take the session for dead while its owner's
// last renewal still has a TTL to run.
func TestAbsenceRunCountsFromTheEarlierSend(t *testing.T) {
	if now, deadline, held := absenceScenario(t, chain.NoBug); held && now < deadline {
		t.Fatalf("the waiter took the session for dead at %v, while its owner holds until %v", now, deadline)
	}
}

// TestAbsenceScenarioCatchesStaleRuns is the negative control of the
// test above: a waiter that keeps a run of missing reads however long
// ago the last was holds before the owner's deadline.
func TestAbsenceScenarioCatchesStaleRuns(t *testing.T) {
	if !chain.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	if now, deadline, held := absenceScenario(t, chain.BugAbsenceNeverStale); !held || now >= deadline {
		t.Fatalf("with runs that never go stale the waiter held = %v at %v, owner's deadline %v: the scenario misses the bug", held, now, deadline)
	}
}

// absenceScenario plays the scenario of TestAbsenceRunCountsFromTheEarlierSend
// with bug planted in the waiter's engine, and returns when the waiter's
// last walk ended, the owner's deadline then, and whether that walk held.
func absenceScenario(t *testing.T, bug chain.Bug) (now, deadline time.Duration, held bool) {
	ctx := context.Background()
	const ttl = time.Second
	clock := &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	store := &droppableSessions{Store: memory.New(), sessions: make(map[string]map[int]time.Time)}
	at := func(d time.Duration) { clock.now = d }
	engine := func() *chain.Engine {
		e, err := chain.New(store, clock, chain.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	o, w := engine(), engine()
	if bug != chain.NoBug {
		w.SetBug(bug)
	}
	osess, _, err := o.OpenSession(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	oc, err := o.Claim(ctx, "k", "o", osess, chain.ExclusiveTerms, false)
	if err != nil {
		t.Fatal(err)
	}
	if head, _, err := o.Walk(ctx, oc); err != nil || !head {
		t.Fatalf("the owner's walk of a free key = %v, %v", head, err)
	}
	wsess, _, err := w.OpenSession(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := w.Claim(ctx, "k", "w", wsess, chain.ExclusiveTerms, false)
	if err != nil {
		t.Fatal(err)
	}
	walk := func() bool {
		t.Helper()
		if _, err := w.Refresh(ctx, []string{"k"}); err != nil {
			t.Fatal(err)
		}
		head, _, err := w.Walk(ctx, wc)
		if err != nil {
			t.Fatal(err)
		}
		if store.onRead != nil {
			t.Fatalf("at %v the waiter's walk did not read the owner's session", clock.now)
		}
		return head
	}
	if walk() {
		t.Fatal("the waiter holds behind a live claim")
	}
	var lastConfirmed time.Duration // the send of the owner's last confirmed renewal
	renew := func() error {
		t.Helper()
		found, sent, err := o.RenewSession(ctx, osess, ttl)
		if err == nil && !found {
			t.Fatalf("at %v the owner's renewal found its session gone", clock.now)
		}
		if err == nil {
			lastConfirmed = sent
		}
		return err
	}
	at(300 * time.Millisecond)
	if err := renew(); err != nil {
		t.Fatal(err)
	}
	at(350 * time.Millisecond)
	store.drop() // D1
	// The owner's next renewals find nothing, but their replies are
	// lost: the first goes on to insert the session's next generation,
	// which is lost too, and so is the insert sent again.
	at(600 * time.Millisecond)
	store.lostReply, store.lose = 1, 1
	if err := renew(); err == nil {
		t.Fatal("a lost renewal was confirmed")
	}
	at(900 * time.Millisecond)
	store.lose = 1
	if err := renew(); err == nil {
		t.Fatal("a lost renewal was confirmed")
	}
	// The waiter's read lands at 1.05 s and finds the session missing;
	// while its reply is on the way (it comes at 1.9 s), the owner's
	// insert lands and re-creates the session.
	at(1050 * time.Millisecond)
	store.onRead = func() {
		at(1100 * time.Millisecond)
		if err := renew(); err != nil {
			t.Fatalf("the owner's insert of its next generation: %v", err)
		}
		at(1900 * time.Millisecond)
	}
	if walk() {
		t.Fatal("the waiter held on its first read of a missing session")
	}
	for now := 1400 * time.Millisecond; now <= 3350*time.Millisecond; now += 325 * time.Millisecond {
		at(now)
		if err := renew(); err != nil {
			t.Fatal(err)
		}
	}
	at(3400 * time.Millisecond)
	store.drop() // D2, 3.05 TTLs after D1
	at(3800 * time.Millisecond)
	store.onRead = func() { at(3850 * time.Millisecond) }
	held = walk()
	return clock.now, lastConfirmed + ttl, held
}
