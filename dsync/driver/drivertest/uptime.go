package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// renewUp renews generation gen of session id through u, failing t unless
// the document was found and stamped; it returns the stamp.
func renewUp(t *testing.T, ctx context.Context, u driver.UptimeStore, id string, gen int, exp time.Time, up []driver.UpSpan) time.Time {
	t.Helper()
	applied, found, err := u.RenewSessionUp(ctx, id, gen, exp, up)
	if err != nil || !found || applied.IsZero() {
		t.Fatalf("RenewSessionUp(%s, %d) = %v, found %v, %v; want a stamp", id, gen, applied, found, err)
	}
	return applied
}

// readUp reads the record of up-time since since, failing t on an error.
func readUp(t *testing.T, ctx context.Context, u driver.UptimeStore, since time.Time) driver.Uptime {
	t.Helper()
	got, err := u.ReadUptime(ctx, since)
	if err != nil {
		t.Fatalf("ReadUptime(%v): %v", since, err)
	}
	return got
}

// spanKey names a span by its ends, whatever their location.
type spanKey [2]int64

func keyOf(s driver.UpSpan) spanKey { return spanKey{s.From.UnixNano(), s.To.UnixNano()} }

// checkSpans checks that got holds every span of written that ends at or
// after since, and nothing that is not one of written.
func checkSpans(t *testing.T, what string, got []driver.UpSpan, written []driver.UpSpan, since time.Time) {
	t.Helper()
	have := make(map[spanKey]bool)
	for _, s := range got {
		have[keyOf(s)] = true
	}
	known := make(map[spanKey]bool)
	for _, s := range written {
		known[keyOf(s)] = true
		if !s.To.Before(since) && !have[keyOf(s)] {
			t.Errorf("%s: ReadUptime since %v = %v; misses [%v, %v]", what, since, got, s.From, s.To)
		}
	}
	for _, s := range got {
		if !known[keyOf(s)] {
			t.Errorf("%s: ReadUptime since %v returned [%v, %v], never written", what, since, s.From, s.To)
		}
	}
}

// testUptimeStamps: RenewSessionUp renews as RenewSession does (raises the
// expiry, never lowers it, creates nothing), and stamps each renewal with
// the store's time when it applied: within the store's ServerTime around
// the call (less a millisecond, which a store may drop), and never before
// the stamp of a renewal applied earlier, of any session document. A store
// without the role skips it.
func (s *suite) testUptimeStamps(t *testing.T) {
	st, ctx := s.store(t)
	u := need(t, st.Roles().Uptime, "Uptime")
	id, other := sessionID(1), sessionID(2)
	t1 := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 0, t1)
	insertSession(t, ctx, st, id, 1, t1)
	insertSession(t, ctx, st, other, 0, t1)

	var last time.Time
	for i := range 9 {
		docID, gen := []string{id, id, other}[i%3], []int{0, 1, 0}[i%3]
		before := st.ServerTime()
		applied := renewUp(t, ctx, u, docID, gen, t1.Add(time.Duration(i)*time.Second), nil)
		after := st.ServerTime()
		if applied.Before(before.Earliest.Add(-time.Millisecond)) || applied.After(after.Latest) {
			t.Errorf("renewal %d stamped %v, outside the store's time around it [%v, %v]", i, applied, before.Earliest, after.Latest)
		}
		if applied.Before(last) {
			t.Errorf("renewal %d stamped %v, before the stamp %v of the renewal before it", i, applied, last)
		}
		last = applied
	}
	checkSession(t, ctx, st, id, 1, t1.Add(7*time.Second)) // generation 1 renewed last, at i = 7
	checkSession(t, ctx, st, other, 0, t1.Add(8*time.Second))

	// Never lowered: a renewal with a lower expiry (one that lands late)
	// leaves the higher, and is stamped all the same.
	renewUp(t, ctx, u, other, 0, t1, nil)
	checkSession(t, ctx, st, other, 0, t1.Add(8*time.Second))

	// Missing: not found, no stamp, nothing created.
	if applied, found, err := u.RenewSessionUp(ctx, sessionID(3), 0, t1, nil); err != nil || found || !applied.IsZero() {
		t.Errorf("RenewSessionUp of a missing session = %v, found %v, %v; want not found, no stamp", applied, found, err)
	}
	checkSession(t, ctx, st, sessionID(3), -1, time.Time{})
	if applied, found, err := u.RenewSessionUp(ctx, id, 2, t1, nil); err != nil || found || !applied.IsZero() {
		t.Errorf("RenewSessionUp of a missing generation = %v, found %v, %v; want not found, no stamp", applied, found, err)
	}
	insertSession(t, ctx, st, id, 2, t1) // the renewal created no generation 2
}

// testUptimeRead: ReadUptime returns the spans and stamps written since
// its since (and perhaps older ones), none that were not written; a later
// renewal that sends the earlier's spans and stamp with more removes
// nothing, also when it lands with a lower expiry; a session document
// whose expiry is at or after since and that RenewSessionUp did not write
// (inserted, or a generation inserted since) is reported, and documents of
// other roles (peers, revocations) are neither evidence nor reported. A
// store without the role skips it.
func (s *suite) testUptimeRead(t *testing.T) {
	st, ctx := s.store(t)
	u := need(t, st.Roles().Uptime, "Uptime")
	now := st.ServerTime().Latest.Truncate(time.Millisecond)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	early := ago(time.Hour)
	if got := readUp(t, ctx, u, early); len(got.Spans) != 0 || got.Unmarked {
		t.Fatalf("ReadUptime of an empty store = %+v; want nothing", got)
	}
	s.otherRoleDocs(t, ctx, st, now)
	if got := readUp(t, ctx, u, early); len(got.Spans) != 0 || got.Unmarked {
		t.Fatalf("ReadUptime beside peers and revocations only = %+v; want nothing", got)
	}

	a, b := sessionID(1), sessionID(2)
	exp := expiry(st, time.Minute)
	insertSession(t, ctx, st, a, 0, exp)
	if got := readUp(t, ctx, u, early); !got.Unmarked || len(got.Spans) != 0 {
		t.Errorf("ReadUptime with a session inserted, not renewed with its record = %+v; want Unmarked, no spans", got)
	}
	if got := readUp(t, ctx, u, exp.Add(time.Millisecond)); got.Unmarked {
		t.Errorf("ReadUptime since after the unmarked session's expiry = %+v; want it not reported", got)
	}

	up1 := []driver.UpSpan{{From: ago(10 * time.Second), To: ago(9 * time.Second)}, {From: ago(5 * time.Second), To: ago(5 * time.Second)}}
	s1 := renewUp(t, ctx, u, a, 0, exp, up1)
	written := append(up1, driver.UpSpan{From: s1, To: s1})
	first := readUp(t, ctx, u, early)
	checkSpans(t, "after one renewal", first.Spans, written, early)
	if first.Unmarked {
		t.Errorf("ReadUptime with every session renewed with its record = %+v; want Unmarked false", first)
	}
	checkSpans(t, "since 6s ago", readUp(t, ctx, u, ago(6*time.Second)).Spans, written, ago(6*time.Second))
	checkSpans(t, "since the stamp", readUp(t, ctx, u, s1).Spans, written, s1)

	// The next renewal sends what the first did, its stamp, and more; it
	// lands as a late one would, with a lower expiry.
	up2 := append(append([]driver.UpSpan(nil), written...), driver.UpSpan{From: ago(2 * time.Second), To: ago(time.Second)})
	s2 := renewUp(t, ctx, u, a, 0, exp.Add(-time.Second), up2)
	checkSession(t, ctx, st, a, 0, exp)
	written = append(up2, driver.UpSpan{From: s2, To: s2})
	second := readUp(t, ctx, u, early)
	checkSpans(t, "after the second renewal", second.Spans, written, early)
	have := make(map[spanKey]bool)
	for _, sp := range second.Spans {
		have[keyOf(sp)] = true
	}
	for _, sp := range first.Spans {
		if !have[keyOf(sp)] {
			t.Errorf("[%v, %v], read after the first renewal, is gone after the second: %v", sp.From, sp.To, second.Spans)
		}
	}

	// Another session's spans come too; its generation inserted since,
	// not renewed with a record, is reported.
	insertSession(t, ctx, st, b, 0, exp)
	up3 := []driver.UpSpan{{From: ago(3 * time.Second), To: ago(3 * time.Second)}}
	s3 := renewUp(t, ctx, u, b, 0, exp, up3)
	written = append(append(written, up3...), driver.UpSpan{From: s3, To: s3})
	third := readUp(t, ctx, u, early)
	checkSpans(t, "with two sessions", third.Spans, written, early)
	if third.Unmarked {
		t.Errorf("ReadUptime with every session renewed with its record = %+v; want Unmarked false", third)
	}
	insertSession(t, ctx, st, b, 1, exp)
	if got := readUp(t, ctx, u, early); !got.Unmarked {
		t.Errorf("ReadUptime with generation 1 of %s inserted, not renewed with its record: Unmarked false", b)
	}
}

// otherRoleDocs records a peer and a revocation, where the store serves
// those roles: they live beside the sessions in some stores.
func (s *suite) otherRoleDocs(t *testing.T, ctx context.Context, st driver.Store, now time.Time) {
	t.Helper()
	if ps := st.Roles().Peers; ps != nil {
		if err := ps.PutPeer(ctx, driver.Peer{ID: "p1", Addr: "127.0.0.1:1", ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatalf("PutPeer: %v", err)
		}
	}
	if rs := st.Roles().Revocations; rs != nil {
		if err := rs.Revoke(ctx, driver.Revocation{Session: sessionID(9), By: "op", Reason: "r", At: now}); err != nil {
			t.Fatalf("Revoke: %v", err)
		}
	}
}
