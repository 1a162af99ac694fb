package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// stepClock is a clock the test moves by hand: exact server time, and
// local time counted from the start.
type stepClock struct {
	t0  time.Time
	now time.Duration
}

func (c *stepClock) ServerNow() queue.Interval {
	t := c.t0.Add(c.now)
	return queue.Interval{Earliest: t, Latest: t}
}
func (c *stepClock) Mono() time.Duration { return c.now }

// jumpedClock is c as a process whose own clock jumped ahead by *ahead
// reads it: the store's time is c's, its local time is later.
type jumpedClock struct {
	*stepClock
	ahead *time.Duration
}

func (c jumpedClock) Mono() time.Duration { return c.now + *c.ahead }

// droppableSessions keeps the sessions in a memory store of their own,
// apart from the documents, so that the test can empty the sessions
// collection alone (drop), lose a session write without applying it
// (lose), hold a session insert back and apply it later (hold, land),
// lose only the reply of a renewal (lostReply), and run something while a
// session read is on its way back (onRead, after the read has landed).
type droppableSessions struct {
	*memory.Store
	sessions  *memory.Store
	lose      int // session inserts to lose, unapplied
	hold      int // session inserts to hold back, unapplied until land
	held      []queue.Session
	lostReply int // renewals applied whose replies are lost
	onRead    func()
}

var errLost = errors.New("test: no reply")

func (s *droppableSessions) drop() { s.sessions.Reset() }

func (s *droppableSessions) InsertSession(ctx context.Context, sess queue.Session) error {
	switch {
	case s.lose > 0:
		s.lose--
		return errLost
	case s.hold > 0:
		s.hold--
		s.held = append(s.held, sess)
		return errLost
	}
	return s.sessions.InsertSession(ctx, sess)
}

// land applies the inserts held back, long after their sender gave up on
// them.
func (s *droppableSessions) land() {
	for _, sess := range s.held {
		s.sessions.InsertSession(context.Background(), sess)
	}
	s.held = nil
}

func (s *droppableSessions) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	found, err := s.sessions.RenewSession(ctx, id, gen, expires)
	if s.lostReply > 0 {
		s.lostReply--
		return false, errLost
	}
	return found, err
}

func (s *droppableSessions) GetSession(ctx context.Context, id string) (queue.Session, bool, error) {
	sess, found, err := s.sessions.GetSession(ctx, id)
	if f := s.onRead; f != nil {
		s.onRead = nil
		f()
	}
	return sess, found, err
}

// absenceRig is an owner o holding key k and a waiter w queued behind
// it, in engines of their own on one store and one clock, each with a
// session of TTL one second.
type absenceRig struct {
	t     *testing.T
	clock *stepClock
	store *droppableSessions
	o, w  *queue.Engine
	osess string
	wc    *queue.Claim
	// lastConfirmed is the send of the owner's last confirmed renewal:
	// the owner holds until a TTL after it (less its margin).
	lastConfirmed time.Duration
	// wAhead is how far the waiter's own clock jumped ahead (stepWaiter).
	wAhead time.Duration
}

const absenceTTL = time.Second

func newAbsenceRig(t *testing.T, bug queue.Bug) *absenceRig {
	ctx := context.Background()
	r := &absenceRig{
		t:     t,
		clock: &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		store: &droppableSessions{Store: memory.New(), sessions: memory.New()},
	}
	engine := func(clock queue.Times) *queue.Engine {
		e, err := queue.New(r.store, clock, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	r.o, r.w = engine(r.clock), engine(jumpedClock{r.clock, &r.wAhead})
	if bug != queue.NoBug {
		r.w.SetBug(bug)
	}
	var err error
	if r.osess, _, err = r.o.OpenSession(ctx, absenceTTL); err != nil {
		t.Fatal(err)
	}
	oc, err := r.o.Claim(ctx, "k", "o", r.osess, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatal(err)
	}
	if head, _, err := r.o.Walk(ctx, oc); err != nil || !head {
		t.Fatalf("the owner's walk of a free key = %v, %v", head, err)
	}
	wsess, _, err := r.w.OpenSession(ctx, absenceTTL)
	if err != nil {
		t.Fatal(err)
	}
	if r.wc, err = r.w.Claim(ctx, "k", "w", wsess, queue.ExclusiveTerms, false); err != nil {
		t.Fatal(err)
	}
	if r.walk() {
		t.Fatal("the waiter holds behind a live claim")
	}
	return r
}

func (r *absenceRig) at(d time.Duration) { r.clock.now = d }

// walk is the waiter's walk; it must read the owner's session when a
// read hook is set.
func (r *absenceRig) walk() bool {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.w.Refresh(ctx, []string{"k"}); err != nil {
		r.t.Fatal(err)
	}
	head, _, err := r.w.Walk(ctx, r.wc)
	if err != nil {
		r.t.Fatal(err)
	}
	if r.store.onRead != nil {
		r.t.Fatalf("at %v the waiter's walk did not read the owner's session", r.clock.now)
	}
	return head
}

// vanishAfterRenewal is the start the scenes share: the owner renews at
// 0.9 s, the sessions collection is emptied at 1 s, and the waiter's walk
// at 1.05 s, past the claim's own expiry, finds the session missing and
// does not hold.
func (r *absenceRig) vanishAfterRenewal() {
	r.t.Helper()
	r.at(900 * time.Millisecond)
	r.renew(false)
	r.at(1000 * time.Millisecond)
	r.store.drop()
	r.at(1050 * time.Millisecond)
	if r.walk() {
		r.t.Fatal("the waiter held on its first read of a missing session")
	}
}

// renew is the owner's renewal; lost says its reply is lost.
func (r *absenceRig) renew(lost bool) {
	r.t.Helper()
	found, sent, err := r.o.RenewSession(context.Background(), r.osess, absenceTTL)
	switch {
	case lost && err == nil:
		r.t.Fatalf("at %v a lost renewal was confirmed", r.clock.now)
	case !lost && err != nil:
		r.t.Fatalf("at %v the owner's renewal: %v", r.clock.now, err)
	case !lost && !found:
		r.t.Fatalf("at %v the owner's renewal found its session gone", r.clock.now)
	case !lost:
		r.lastConfirmed = sent
	}
}

// lostRenewals are the owner's renewals after its session's documents
// vanished: each finds nothing, but its reply is lost, so the first goes
// on to insert the session's next generation, which is lost too, and so
// is that insert sent again by the next one.
func (r *absenceRig) lostRenewals(at ...time.Duration) {
	for i, d := range at {
		r.at(d)
		if i == 0 {
			r.store.lostReply = 1
		}
		r.store.lose = 1
		r.renew(true)
	}
}

// TestAbsenceIsCountedToTheLastReadsSend: a waiter takes a session whose
// documents are missing for dead only once a read sent a TTL after the
// first reply that found them missing finds them missing too. Counted to
// that read's reply, a slow reply would do: here the owner re-creates its
// session (an insert of its next generation, after a renewal whose reply
// was lost) between the landing of the waiter's read and its reply, and
// holds on.
func TestAbsenceIsCountedToTheLastReadsSend(t *testing.T) {
	if now, deadline, held := slowReply(t, queue.NoBug); held && now < deadline {
		t.Fatalf("the waiter took the session for dead at %v, while its owner holds until %v", now, deadline)
	}
}

// TestAbsenceScenarioCatchesCountingToTheReply is the negative control of
// the test above.
func TestAbsenceScenarioCatchesPlantedCountingToTheReply(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	if now, deadline, held := slowReply(t, queue.BugAbsenceToReply); !held || now >= deadline {
		t.Fatalf("counting to the reply the waiter held = %v at %v, owner's deadline %v: the scenario misses the bug", held, now, deadline)
	}
}

// slowReply plays the scenario of TestAbsenceIsCountedToTheLastReadsSend
// with bug planted in the waiter's engine, and returns when the waiter's
// last walk ended, the owner's deadline then, and whether that walk held.
func slowReply(t *testing.T, bug queue.Bug) (now, deadline time.Duration, held bool) {
	r := newAbsenceRig(t, bug)
	r.vanishAfterRenewal()
	r.lostRenewals(1200*time.Millisecond, 1500*time.Millisecond)
	r.at(1700 * time.Millisecond)
	r.store.onRead = func() {
		r.at(1800 * time.Millisecond)
		r.renew(false) // lands, before the owner's deadline
		r.at(2100 * time.Millisecond)
	}
	held = r.walk()
	return r.clock.now, r.lastConfirmed + absenceTTL, held
}

// TestAbsenceIsCountedInTheStoresTime: a waiter whose own clock jumps a
// TTL ahead while it finds a session missing still takes the session for
// dead only once it was missing for a TTL of the store's time, after the
// owner's deadline. Counted on the waiter's own clock, the run looked a
// TTL long at once, and the waiter held beside the owner (the public-API
// simulation's one-leader violations, a step of the waiter's clock in a
// run after the sessions collection was emptied).
func TestAbsenceIsCountedInTheStoresTime(t *testing.T) {
	r := newAbsenceRig(t, queue.NoBug)
	r.vanishAfterRenewal()
	r.lostRenewals(1100 * time.Millisecond)
	r.wAhead = absenceTTL // the waiter's clock jumps ahead
	r.at(1200 * time.Millisecond)
	deadline := r.lastConfirmed + absenceTTL
	if r.walk() {
		t.Fatalf("the waiter took the session for dead at %v (its clock a TTL ahead), while its owner holds until %v", r.clock.now, deadline)
	}
	r.at(deadline + 150*time.Millisecond)
	if !r.walk() {
		t.Fatalf("the waiter does not hold at %v, a TTL of the store's time after it found the session missing", r.clock.now)
	}
}

// TestAbsenceRunCountsFromTheEarlierSend: a waiter's run of reads that
// found a session missing starts again when a read replies more than two
// TTLs after the one before it was sent. Here the sessions collection is
// emptied twice, three TTLs and a little apart (what the documentation
// allows), and the owner re-creates its session in between, unseen: the
// waiter's first read landed before that and replied late, and its next
// read landed after the second emptying, less than two TTLs after that
// late reply. Counting from the reply, the waiter would take the session
// for dead while its owner's last renewal still has a TTL to run.
func TestAbsenceRunCountsFromTheEarlierSend(t *testing.T) {
	if now, deadline, held := twoEmptyings(t, queue.NoBug); held && now < deadline {
		t.Fatalf("the waiter took the session for dead at %v, while its owner holds until %v", now, deadline)
	}
}

// TestAbsenceScenarioCatchesStaleRuns is the negative control of the
// test above: a waiter that keeps a run of missing reads however long
// ago the last was holds before the owner's deadline.
func TestAbsenceScenarioCatchesPlantedStaleRuns(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	if now, deadline, held := twoEmptyings(t, queue.BugAbsenceNeverStale); !held || now >= deadline {
		t.Fatalf("with runs that never go stale the waiter held = %v at %v, owner's deadline %v: the scenario misses the bug", held, now, deadline)
	}
}

// twoEmptyings plays the scenario of TestAbsenceRunCountsFromTheEarlierSend
// with bug planted in the waiter's engine, and returns when the waiter's
// last walk ended, the owner's deadline then, and whether that walk held.
func twoEmptyings(t *testing.T, bug queue.Bug) (now, deadline time.Duration, held bool) {
	r := newAbsenceRig(t, bug)
	r.at(300 * time.Millisecond)
	r.renew(false)
	r.at(350 * time.Millisecond)
	r.store.drop() // D1
	r.lostRenewals(600*time.Millisecond, 900*time.Millisecond)
	// The waiter's read lands at 1.05 s and finds the session missing;
	// while its reply is on the way (it comes at 1.9 s), the owner's
	// insert lands and re-creates the session.
	r.at(1050 * time.Millisecond)
	r.store.onRead = func() {
		r.at(1100 * time.Millisecond)
		r.renew(false)
		r.at(1900 * time.Millisecond)
	}
	if r.walk() {
		t.Fatal("the waiter held on its first read of a missing session")
	}
	for now := 1400 * time.Millisecond; now <= 3350*time.Millisecond; now += 325 * time.Millisecond {
		r.at(now)
		r.renew(false)
	}
	r.at(3400 * time.Millisecond)
	r.store.drop() // D2, 3.05 TTLs after D1
	r.at(3800 * time.Millisecond)
	r.store.onRead = func() { r.at(3850 * time.Millisecond) }
	held = r.walk()
	return r.clock.now, r.lastConfirmed + absenceTTL, held
}

// TestLateSessionInsertAfterADropIsNotAnExpiry: a session that a late
// insert of a later generation brought back after the sessions were
// dropped, with an old expiry, is not taken for expired while its owner
// still holds: without its first generation it counts as missing, and
// its claim as dead only after the claim's TTL. Here the owner's renewal
// at 0.4 s loses its reply, so it goes on to insert generation 1 (expiry
// 1.4 s), held back; the next renewal's insert of generation 1 lands and
// a renewal of it at 1 s is confirmed (the owner holds until 2 s). The
// sessions are dropped at 1.05 s, the held insert lands just after, and
// the owner pauses: at 1.5 s the waiter finds only generation 1, expired.
func TestLateSessionInsertAfterADropIsNotAnExpiry(t *testing.T) {
	r, held := lateInsert(t, queue.NoBug)
	if deadline := r.lastConfirmed + absenceTTL; held && r.clock.now < deadline {
		t.Fatalf("the waiter took the session for dead at %v, while its owner holds until %v", r.clock.now, deadline)
	}
	// Found so for the TTL, the session is dead: the waiter takes over.
	r.at(2600 * time.Millisecond)
	r.store.onRead = func() {}
	if !r.walk() {
		t.Fatalf("at %v, a TTL after the waiter first found the session expired without its first generation, the waiter does not hold", r.clock.now)
	}
}

// TestLateInsertScenarioCatchesPlantedLostFirstIsDead is the negative
// control of the test above.
func TestLateInsertScenarioCatchesPlantedLostFirstIsDead(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	r, held := lateInsert(t, queue.BugLostFirstIsDead)
	if deadline := r.lastConfirmed + absenceTTL; !held || r.clock.now >= deadline {
		t.Fatalf("judging a session without its first generation by its expiry the waiter held = %v at %v, owner's deadline %v: the scenario misses the bug", held, r.clock.now, deadline)
	}
}

// lateInsert plays the scenario of
// TestLateSessionInsertAfterADropIsNotAnExpiry with bug planted in the
// waiter's engine, and returns the rig after the waiter's walk at 1.5 s,
// and whether that walk held.
func lateInsert(t *testing.T, bug queue.Bug) (r *absenceRig, held bool) {
	r = newAbsenceRig(t, bug)
	r.at(300 * time.Millisecond)
	r.renew(false)
	r.at(400 * time.Millisecond)
	r.store.lostReply, r.store.hold = 1, 1
	r.renew(true) // generation 0's renewal loses its reply; generation 1's insert is held back
	r.at(700 * time.Millisecond)
	r.renew(false) // generation 1's insert, sent again, lands
	r.at(1000 * time.Millisecond)
	r.renew(false) // an update of generation 1; then the owner pauses
	r.at(1050 * time.Millisecond)
	r.store.drop()
	r.at(1060 * time.Millisecond)
	r.store.land() // generation 1 again, expiring at 1.4 s
	r.at(1500 * time.Millisecond)
	r.store.onRead = func() {}
	return r, r.walk()
}
