package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// sessionID is the i-th session's ID, shaped as the protocol's are (20
// characters of [0-9a-v]).
func sessionID(i int) string { return fmt.Sprintf("c%019d", i) }

// expiry is a session expiry d after the store's now, in whole
// milliseconds, as the protocol's are.
func expiry(st driver.Store, d time.Duration) time.Time {
	return st.ServerTime().Latest.Add(d).Truncate(time.Millisecond)
}

func insertSession(t *testing.T, ctx context.Context, st driver.Store, id string, gen int, exp time.Time) {
	t.Helper()
	if err := st.InsertSession(ctx, driver.Session{ID: id, Gen: gen, ExpiresAt: exp}); err != nil {
		t.Fatalf("InsertSession(%s, %d): %v", id, gen, err)
	}
}

func renew(t *testing.T, ctx context.Context, st driver.Store, id string, gen int, exp time.Time) {
	t.Helper()
	if found, err := st.RenewSession(ctx, id, gen, exp); err != nil || !found {
		t.Fatalf("RenewSession(%s, %d) = found %v, %v; want found", id, gen, found, err)
	}
}

// checkSession checks that GetSession(id) is generation gen, expiring at
// exp (gen < 0: none).
func checkSession(t *testing.T, ctx context.Context, st driver.Store, id string, gen int, exp time.Time) {
	t.Helper()
	s, found, err := st.GetSession(ctx, id)
	switch {
	case err != nil:
		t.Errorf("GetSession(%s): %v", id, err)
	case gen < 0 && found:
		t.Errorf("GetSession(%s) = %+v, want none", id, s)
	case gen >= 0 && !found:
		t.Errorf("GetSession(%s) = none, want generation %d expiring at %v", id, gen, exp)
	case gen >= 0 && (s.ID != id || s.Gen != gen || !s.ExpiresAt.Equal(exp)):
		t.Errorf("GetSession(%s) = %+v, want generation %d expiring at %v", id, s, gen, exp)
	}
}

// testSessions: a generation is inserted once; GetSession returns the
// generation with the highest expiry, of that session only.
func (s *suite) testSessions(t *testing.T) {
	st, ctx := s.store(t)
	id, other := sessionID(1), sessionID(2)
	checkSession(t, ctx, st, id, -1, time.Time{})

	t1 := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 0, t1)
	checkSession(t, ctx, st, id, 0, t1)
	if err := st.InsertSession(ctx, driver.Session{ID: id, Gen: 0, ExpiresAt: t1.Add(time.Hour)}); !errors.Is(err, driver.ErrExists) {
		t.Errorf("InsertSession of an existing generation = %v, want ErrExists", err)
	}
	checkSession(t, ctx, st, id, 0, t1)

	insertSession(t, ctx, st, other, 0, t1.Add(time.Hour)) // another session's, later
	insertSession(t, ctx, st, id, 1, t1.Add(time.Minute))
	insertSession(t, ctx, st, id, 2, t1.Add(-time.Second))
	checkSession(t, ctx, st, id, 1, t1.Add(time.Minute))
	insertSession(t, ctx, st, id, 12, t1.Add(2*time.Minute)) // 12 after 2: numbers
	checkSession(t, ctx, st, id, 12, t1.Add(2*time.Minute))
	if err := st.InsertSession(ctx, driver.Session{ID: id, Gen: 1, ExpiresAt: t1}); !errors.Is(err, driver.ErrExists) {
		t.Errorf("InsertSession of an existing generation = %v, want ErrExists", err)
	}

	// A renewal of one generation raises the session's expiry.
	renew(t, ctx, st, id, 2, t1.Add(3*time.Minute))
	checkSession(t, ctx, st, id, 2, t1.Add(3*time.Minute))
	checkSession(t, ctx, st, other, 0, t1.Add(time.Hour))
	checkSession(t, ctx, st, sessionID(3), -1, time.Time{})
}

// testSessionFirst: GetSession says whether generation 0 is among the
// session's documents, whichever generation has the highest expiry. (A
// session found without it, every document expired, may be one a late
// insert brought back after its collection was dropped: the engine waits
// a TTL before it takes its claims for dead.)
func (s *suite) testSessionFirst(t *testing.T) {
	st, ctx := s.store(t)
	id, other := sessionID(1), sessionID(2)
	first := func(id string, want bool) {
		t.Helper()
		if sess, found, err := st.GetSession(ctx, id); err != nil || !found || sess.HasFirst != want {
			t.Errorf("GetSession(%s) = %+v, found %v, %v; want HasFirst %v", id, sess, found, err, want)
		}
	}
	t1 := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 2, t1)
	first(id, false)
	insertSession(t, ctx, st, id, 1, t1.Add(time.Minute))
	first(id, false)
	insertSession(t, ctx, st, other, 0, t1) // another session's generation 0
	first(id, false)
	insertSession(t, ctx, st, id, 0, t1.Add(-time.Second)) // the lowest expiry
	checkSession(t, ctx, st, id, 1, t1.Add(time.Minute))
	first(id, true)
	first(other, true)
	insertSession(t, ctx, st, sessionID(3), 10, t1) // "~10" is not generation 0's ID
	first(sessionID(3), false)
}

// testRenewNeverLowers: a renewal applied after a later one, with a lower
// expiry, leaves the higher. (A session that a shorter renewal cut short
// would let another process take over a live holder's key.)
func (s *suite) testRenewNeverLowers(t *testing.T) {
	st, ctx := s.store(t)
	id := sessionID(1)
	t1 := expiry(st, 10*time.Second)
	insertSession(t, ctx, st, id, 0, t1)
	renew(t, ctx, st, id, 0, t1.Add(time.Minute))
	renew(t, ctx, st, id, 0, t1) // late, lower: ignored
	checkSession(t, ctx, st, id, 0, t1.Add(time.Minute))
	renew(t, ctx, st, id, 0, t1.Add(-time.Second)) // lower than the first: ignored
	checkSession(t, ctx, st, id, 0, t1.Add(time.Minute))
	renew(t, ctx, st, id, 0, t1.Add(time.Minute)) // the same: kept
	checkSession(t, ctx, st, id, 0, t1.Add(time.Minute))

	// Each generation's expiry on its own: generation 0's, not lowered,
	// stays above generation 1's.
	insertSession(t, ctx, st, id, 1, t1.Add(30*time.Second))
	renew(t, ctx, st, id, 0, t1)
	checkSession(t, ctx, st, id, 0, t1.Add(time.Minute))
	renew(t, ctx, st, id, 1, t1.Add(2*time.Minute))
	renew(t, ctx, st, id, 1, t1.Add(time.Second))
	checkSession(t, ctx, st, id, 1, t1.Add(2*time.Minute))
}

// testRenewMissing: a renewal of a generation that does not exist is not
// found, and creates nothing.
func (s *suite) testRenewMissing(t *testing.T) {
	st, ctx := s.store(t)
	id, t1 := sessionID(1), expiry(st, time.Minute)
	notFound := func(id string, gen int) {
		t.Helper()
		if found, err := st.RenewSession(ctx, id, gen, t1.Add(time.Hour)); err != nil || found {
			t.Errorf("RenewSession(%s, %d) of a missing generation = found %v, %v; want not found", id, gen, found, err)
		}
	}
	notFound(id, 0)
	checkSession(t, ctx, st, id, -1, time.Time{})
	insertSession(t, ctx, st, id, 0, t1)
	notFound(id, 1)
	checkSession(t, ctx, st, id, 0, t1)
	insertSession(t, ctx, st, id, 1, t1.Add(-time.Second)) // the renewal created no generation 1
	checkSession(t, ctx, st, id, 0, t1)
}

// testServerTime: ServerTime may be called before Prepare (driver.Store:
// Prepare "is called before any other method but ServerTime"). Once
// prepared, every interval it returns can contain the store's clock as it
// moves forward: Earliest is at most Latest; a later
// interval's Latest is at least an earlier one's Earliest; and across a
// pause the intervals move by about the time that passed. (Earliest
// itself may move back a little: an estimate from a new sample of a
// remote clock may be wider than the one before.)
func (s *suite) testServerTime(t *testing.T) {
	st := s.open(t)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("ServerTime before Prepare panicked: %v", r)
			}
		}()
		st.ServerTime() // allowed, though not valid yet
	}()
	s.prepare(t, st)
	check := func(iv driver.Interval) {
		t.Helper()
		if iv.Earliest.IsZero() || iv.Latest.Before(iv.Earliest) {
			t.Fatalf("ServerTime() = [%v, %v]: not an interval", iv.Earliest, iv.Latest)
		}
	}
	first := st.ServerTime()
	check(first)
	prev := first
	for range 1000 {
		iv := st.ServerTime()
		check(iv)
		if iv.Latest.Before(prev.Earliest) || iv.Latest.Before(first.Earliest) {
			t.Fatalf("ServerTime() = [%v, %v] after [%v, %v]: the clock went back", iv.Earliest, iv.Latest, prev.Earliest, prev.Latest)
		}
		prev = iv
	}

	// A pause of 100ms: the store's clock moved by about that much (1%).
	t0 := time.Now()
	a := st.ServerTime()
	t1 := time.Now()
	time.Sleep(100 * time.Millisecond)
	t2 := time.Now()
	b := st.ServerTime()
	t3 := time.Now()
	if least := t2.Sub(t1) * 99 / 100; b.Latest.Sub(a.Earliest) < least {
		t.Errorf("ServerTime moved %v in %v", b.Latest.Sub(a.Earliest), t2.Sub(t1))
	}
	if most := t3.Sub(t0) * 101 / 100; b.Earliest.Sub(a.Latest) > most {
		t.Errorf("ServerTime moved %v in %v", b.Earliest.Sub(a.Latest), t3.Sub(t0))
	}
}
