package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testOutage: a store's Roles.Outages records the first outage record of
// a suspension (its session and Suspended) and keeps it: of racers
// recording one, exactly one succeeds, the others get ErrExists, and the
// record listed is the winner's, every field as sent (times in whole
// milliseconds, as a store may keep them). Another suspension of the
// session, or the same time in another session, is a record of its own;
// a listing since a time has exactly the records sent since. A record is
// no session, and no evidence of up-time: ReadUptime neither counts it as
// a session document nor returns its times. A store without the role
// skips it.
func (s *suite) testOutage(t *testing.T) {
	st, ctx := s.store(t)
	rec := need(t, st.Roles().Outages, "Outages")
	id, other := sessionID(1), sessionID(2)
	exp := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 0, exp)
	if got, err := rec.ListOutages(ctx, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("ListOutages before any = %+v, %v; want none", got, err)
	}

	at := st.ServerTime().Latest.Truncate(time.Millisecond)
	outage := func(session string, suspended time.Time, holds int, sent time.Time) driver.Outage {
		return driver.Outage{Session: session, Host: "h", PID: 7, Suspended: suspended, Resumed: suspended.Add(12 * time.Second), Holds: holds, At: sent}
	}
	first := at.Add(-time.Hour)
	winner := raceOnce(t, "RecordOutage", func(i int) error { return rec.RecordOutage(ctx, outage(id, first, i, first.Add(13*time.Second))) })
	// A later copy, as a resend that lands late, changes nothing.
	if err := rec.RecordOutage(ctx, outage(id, first, 99, at)); !errors.Is(err, driver.ErrExists) {
		t.Errorf("a second RecordOutage later = %v; want ErrExists", err)
	}
	second, theirs := outage(id, at.Add(-time.Minute), 100, at), outage(other, first, 101, at)
	for _, o := range []driver.Outage{second, theirs} {
		if err := rec.RecordOutage(ctx, o); err != nil {
			t.Fatalf("RecordOutage(%s, %v): %v", o.Session, o.Suspended, err)
		}
	}

	want := map[[2]string]driver.Outage{}
	for _, o := range []driver.Outage{outage(id, first, winner, first.Add(13*time.Second)), second, theirs} {
		want[[2]string{o.Session, o.Suspended.String()}] = o
	}
	for _, c := range []struct {
		since time.Time
		n     int
	}{{time.Time{}, 3}, {at, 2}, {at.Add(time.Millisecond), 0}} {
		got, err := rec.ListOutages(ctx, c.since)
		if err != nil {
			t.Fatalf("ListOutages(%v): %v", c.since, err)
		}
		if len(got) != c.n {
			t.Fatalf("ListOutages(%v) = %+v; want %d records", c.since, got, c.n)
		}
		for _, r := range got {
			w, ok := want[[2]string{r.Session, r.Suspended.String()}]
			if !ok || r.Host != w.Host || r.PID != w.PID || !r.Resumed.Equal(w.Resumed) || r.Holds != w.Holds || !r.At.Equal(w.At) {
				t.Errorf("ListOutages(%v) has %+v; want one of %+v", c.since, r, want)
			}
		}
	}
	// The records are not sessions: the session stays as it was, the
	// other session, never inserted, has no document, and the record of
	// up-time has neither.
	if sess, found, err := st.GetSession(ctx, id); err != nil || !found || !sess.ExpiresAt.Equal(exp) {
		t.Errorf("GetSession(%s) after RecordOutage = %+v, found %v, %v; want expiry %v, untouched", id, sess, found, err, exp)
	}
	if sess, found, err := st.GetSession(ctx, other); err != nil || found {
		t.Errorf("GetSession of a session with only an outage record = %+v, found %v, %v; want not found", sess, found, err)
	}
	if up := st.Roles().Uptime; up != nil {
		u, err := up.ReadUptime(ctx, time.Time{})
		if err != nil {
			t.Fatalf("ReadUptime: %v", err)
		}
		if len(u.Spans) != 0 {
			t.Errorf("ReadUptime beside outage records = %+v; want no spans (no renewal with a record was sent)", u)
		}
	}
}
