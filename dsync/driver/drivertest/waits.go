package drivertest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testWaits: a store's Roles.Waits keeps the first note of each ID (set
// and number): of racers putting one, exactly one succeeds, the others
// get ErrExists, and the note read back is the winner's, every field as
// sent. LatestWait returns a set's note of the highest number, not the
// last stored, and never another set's, even one whose name begins with
// the set's and ":". ListWaits lists the notes sent at or after a time,
// of every set. A note changed by its sender after the put is stored as
// it was put. A store without the role skips it.
func (s *suite) testWaits(t *testing.T) {
	st, ctx := s.store(t)
	ws := need(t, st.Roles().Waits, "Waits")
	if w, found, err := ws.LatestWait(ctx, "set-a"); err != nil || found {
		t.Fatalf("LatestWait of a set with no note = %+v, %v, %v; want not found", w, found, err)
	}
	if got, err := ws.ListWaits(ctx, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("ListWaits before any = %+v, %v; want none", got, err)
	}

	at := st.ServerTime().Latest.Truncate(time.Millisecond)
	note := func(set string, n uint64, i int, at time.Time) driver.Wait {
		return driver.Wait{
			Set: set, N: n, Key: fmt.Sprintf("dsync:rw/k%d", i), Epoch: 40 + uint64(i), Nonce: fmt.Sprintf("nonce%d", i),
			Holds: []driver.ClaimRef{{Key: "acct/1", Epoch: 7, Nonce: "h1"}, {Key: fmt.Sprintf("acct/%d", i+2), Epoch: 9, Nonce: "h2"}},
			Since: at.Add(-time.Minute), Session: sessionID(1), Host: "h", PID: 7 + i, At: at,
		}
	}
	winner := raceOnce(t, "PutWait", func(i int) error { return ws.PutWait(ctx, note("set-a", 1, i, at)) })
	first := note("set-a", 1, winner, at)
	latestIs(t, ws, "set-a", first)

	// A later copy of note 1, every field changed, as a resend landing
	// late: refused, and the note stays.
	if err := ws.PutWait(ctx, note("set-a", 1, 99, at.Add(time.Hour))); !errors.Is(err, driver.ErrExists) {
		t.Errorf("a second PutWait of note 1 = %v; want ErrExists", err)
	}
	latestIs(t, ws, "set-a", first)

	// Note 3, then note 2 landing late, with a later At (an At is an
	// estimate: the number orders a set's notes): the latest is 3. The
	// sender's slice, changed after the put, changes nothing stored.
	third, second := note("set-a", 3, 30, at.Add(time.Second)), note("set-a", 2, 20, at.Add(2*time.Second))
	put := third
	put.Holds = slices.Clone(third.Holds)
	if err := ws.PutWait(ctx, put); err != nil {
		t.Fatalf("PutWait(set-a, 3): %v", err)
	}
	put.Holds[0].Nonce = "changed after the put"
	if err := ws.PutWait(ctx, second); err != nil {
		t.Fatalf("PutWait(set-a, 2): %v", err)
	}
	latestIs(t, ws, "set-a", third)

	// Other sets: one whose name begins with set-a's and ":", with a
	// higher number; one with the same numbers. Neither is set-a's.
	prefixed, other := note("set-a:9", 12, 40, at.Add(3*time.Second)), note("set-b", 3, 50, at.Add(4*time.Second))
	for _, w := range []driver.Wait{prefixed, other} {
		if err := ws.PutWait(ctx, w); err != nil {
			t.Fatalf("PutWait(%s, %d): %v", w.Set, w.N, err)
		}
	}
	latestIs(t, ws, "set-a", third)
	latestIs(t, ws, "set-a:9", prefixed)
	latestIs(t, ws, "set-b", other)

	listIs(t, ws, time.Time{}, first, second, third, prefixed, other)
	listIs(t, ws, second.At, second, prefixed, other)
	listIs(t, ws, other.At.Add(time.Millisecond))
}

// latestIs checks that set's latest note is want.
func latestIs(t *testing.T, ws driver.WaitStore, set string, want driver.Wait) {
	t.Helper()
	got, found, err := ws.LatestWait(testCtx(t), set)
	if err != nil || !found {
		t.Fatalf("LatestWait(%s) = found %v, %v; want note %d", set, found, err, want.N)
	}
	if !sameRecord(got, want) {
		t.Errorf("LatestWait(%s) = %+v; want %+v", set, got, want)
	}
}

// listIs checks that ListWaits(since) lists exactly want.
func listIs(t *testing.T, ws driver.WaitStore, since time.Time, want ...driver.Wait) {
	t.Helper()
	got, err := ws.ListWaits(testCtx(t), since)
	if err != nil {
		t.Fatalf("ListWaits(%v): %v", since, err)
	}
	by := make(map[string]driver.Wait)
	for _, w := range got {
		by[driver.WaitID(w.Set, w.N)] = w
	}
	if len(got) != len(want) || len(by) != len(want) {
		t.Fatalf("ListWaits(%v) = %d notes %+v; want %d", since, len(got), got, len(want))
	}
	for _, w := range want {
		if g, ok := by[driver.WaitID(w.Set, w.N)]; !ok || !sameRecord(g, w) {
			t.Errorf("ListWaits(%v): note (%s, %d) = %+v, listed %v; want %+v", since, w.Set, w.N, g, ok, w)
		}
	}
}

// sameRecord tells whether two records (of one type) are the same, times
// compared as instants (a store may keep another location).
func sameRecord[R driver.Wait | driver.Deadlock](a, b R) bool {
	return reflect.DeepEqual(utcTimes(reflect.ValueOf(&a).Elem()), utcTimes(reflect.ValueOf(&b).Elem()))
}

// utcTimes sets every time.Time field of the struct v in UTC, and returns
// v's value.
func utcTimes(v reflect.Value) any {
	for i := range v.NumField() {
		if f, ok := v.Field(i).Interface().(time.Time); ok {
			v.Field(i).Set(reflect.ValueOf(f.UTC()))
		}
	}
	return v.Interface()
}

// testDeadlocks: a store's Roles.Deadlocks keeps the first record of each
// ID (victim and note): of racers putting one, exactly one succeeds, and
// the record listed is the winner's, its cycle whole. Another note of the
// victim, or another victim, has a record of its own. ListDeadlocks lists
// the records sent at or after a time. A store without the role skips it.
func (s *suite) testDeadlocks(t *testing.T) {
	st, ctx := s.store(t)
	ds := need(t, st.Roles().Deadlocks, "Deadlocks")
	if got, err := ds.ListDeadlocks(ctx, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("ListDeadlocks before any = %+v, %v; want none", got, err)
	}
	at := st.ServerTime().Latest.Truncate(time.Millisecond)
	record := func(victim string, n uint64, i int, at time.Time) driver.Deadlock {
		return driver.Deadlock{
			Victim: victim, N: n, Session: sessionID(1), Host: "h", PID: 100 + i, At: at,
			Cycle: []driver.DeadlockEdge{
				{Set: victim, Key: "b", Epoch: 5, HeldBy: "set-y", Token: uint64(4 + i)},
				{Set: "set-y", Key: "a", Epoch: 8, HeldBy: victim, Token: 3},
			},
		}
	}
	first := record("set-x", 2, raceOnce(t, "PutDeadlock", func(i int) error { return ds.PutDeadlock(ctx, record("set-x", 2, i, at)) }), at)
	if err := ds.PutDeadlock(ctx, record("set-x", 2, 99, at.Add(time.Hour))); !errors.Is(err, driver.ErrExists) {
		t.Errorf("a second PutDeadlock of (set-x, 2) = %v; want ErrExists", err)
	}
	later, other := record("set-x", 3, 30, at.Add(time.Second)), record("set-z", 2, 40, at.Add(2*time.Second))
	for _, d := range []driver.Deadlock{later, other} {
		if err := ds.PutDeadlock(ctx, d); err != nil {
			t.Fatalf("PutDeadlock(%s, %d): %v", d.Victim, d.N, err)
		}
	}
	for _, c := range []struct {
		since time.Time
		want  []driver.Deadlock
	}{{time.Time{}, []driver.Deadlock{first, later, other}}, {later.At, []driver.Deadlock{later, other}}, {other.At.Add(time.Millisecond), nil}} {
		got, err := ds.ListDeadlocks(ctx, c.since)
		if err != nil {
			t.Fatalf("ListDeadlocks(%v): %v", c.since, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("ListDeadlocks(%v) = %+v; want %d records", c.since, got, len(c.want))
		}
		for _, w := range c.want {
			i := slices.IndexFunc(got, func(d driver.Deadlock) bool { return d.Victim == w.Victim && d.N == w.N })
			if i < 0 || !sameRecord(got[i], w) {
				t.Errorf("ListDeadlocks(%v): no record equal to %+v in %+v", c.since, w, got)
			}
		}
	}
}
