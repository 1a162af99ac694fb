package drivertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testStall: a store's Roles.Stalls records the first stall record of a
// claim (its session and nonce) and keeps it: of racers recording one,
// exactly one succeeds, the others get ErrExists, and the record listed
// is the winner's, every field as sent (times in whole milliseconds, as a
// store may keep them). Records of other claims of the session, or of the
// same nonce in another session, are records of their own. A record is no
// session, and no revocation. A store without the role skips it.
func (s *suite) testStall(t *testing.T) {
	st, ctx := s.store(t)
	ss := need(t, st.Roles().Stalls, "Stalls")
	id, other := sessionID(1), sessionID(2)
	exp := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 0, exp)
	if got, err := ss.Stalls(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Stalls before any = %+v, %v; want none", got, err)
	}

	at := st.ServerTime().Latest.Truncate(time.Millisecond)
	stall := func(session, nonce string, i int) driver.Stall {
		return driver.Stall{
			Key: "dsync:sem/k", Token: 41, Owner: fmt.Sprintf("owner%d", i), Session: session, Nonce: nonce,
			Host: "h", PID: 7, Since: at.Add(-time.Minute), LastProgress: at.Add(-10 * time.Second), At: at,
		}
	}
	winner := raceOnce(t, "RecordStall", func(i int) error { return ss.RecordStall(ctx, stall(id, "n1", i)) })
	// A later copy, as a resend that lands late, changes nothing.
	late := stall(id, "n1", 99)
	late.At = at.Add(time.Hour)
	if err := ss.RecordStall(ctx, late); !errors.Is(err, driver.ErrExists) {
		t.Errorf("a second RecordStall later = %v; want ErrExists", err)
	}
	for _, r := range []driver.Stall{stall(id, "n2", 100), stall(other, "n1", 101)} {
		if err := ss.RecordStall(ctx, r); err != nil {
			t.Fatalf("RecordStall(%s, %s): %v", r.Session, r.Nonce, err)
		}
	}
	if rs := st.Roles().Revocations; rs != nil {
		if err := rs.Revoke(ctx, driver.Revocation{Session: id, By: "op", Reason: "r", At: at}); err != nil {
			t.Fatalf("Revoke: %v", err)
		}
		if got, err := rs.Revocations(ctx); err != nil || len(got) != 1 {
			t.Errorf("Revocations beside stall records = %+v, %v; want the one revocation", got, err)
		}
	}

	got, err := ss.Stalls(ctx)
	if err != nil {
		t.Fatalf("Stalls: %v", err)
	}
	by := make(map[[2]string]driver.Stall)
	for _, r := range got {
		by[[2]string{r.Session, r.Nonce}] = r
	}
	if len(got) != 3 || len(by) != 3 {
		t.Fatalf("Stalls = %+v; want one record of each of (%s, n1), (%s, n2), (%s, n1)", got, id, id, other)
	}
	for _, want := range []driver.Stall{stall(id, "n1", winner), stall(id, "n2", 100), stall(other, "n1", 101)} {
		r := by[[2]string{want.Session, want.Nonce}]
		if r.Key != want.Key || r.Token != want.Token || r.Owner != want.Owner || r.Host != want.Host || r.PID != want.PID ||
			!r.Since.Equal(want.Since) || !r.LastProgress.Equal(want.LastProgress) || !r.At.Equal(want.At) {
			t.Errorf("record of (%s, %s) = %+v; want %+v", want.Session, want.Nonce, r, want)
		}
	}
	// The records are not sessions: the session stays as it was, and the
	// other session, never inserted, has no document.
	if sess, found, err := st.GetSession(ctx, id); err != nil || !found || !sess.ExpiresAt.Equal(exp) {
		t.Errorf("GetSession(%s) after RecordStall = %+v, found %v, %v; want expiry %v, untouched", id, sess, found, err, exp)
	}
	if sess, found, err := st.GetSession(ctx, other); err != nil || found {
		t.Errorf("GetSession of a session with only a stall record = %+v, found %v, %v; want not found", sess, found, err)
	}
}
