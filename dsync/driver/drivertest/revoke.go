package drivertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testRevoke: a store's Roles.Revocations records the first revocation of a
// session and keeps it: of racers revoking one session, exactly one
// succeeds, the others get ErrExists, and the record listed is the
// winner's, unchanged by later revokes or by renewals of the session. A
// store without the role skips it.
func (s *suite) testRevoke(t *testing.T) {
	st, ctx := s.store(t)
	rs := need(t, st.Roles().Revocations, "Revocations")
	id := sessionID(1)
	exp := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 0, exp)

	winner := raceOnce(t, "Revoke", func(i int) error {
		return rs.Revoke(ctx, driver.Revocation{Session: id, By: fmt.Sprintf("op%d", i), Reason: "stuck", At: st.ServerTime().Latest})
	})
	// A renewal after the revoke leaves the record as it was.
	if found, err := st.RenewSession(ctx, id, 0, exp.Add(time.Minute)); err != nil || !found {
		t.Fatalf("RenewSession after Revoke = found %v, %v; want found", found, err)
	}
	if err := rs.Revoke(ctx, driver.Revocation{Session: id, By: "late", Reason: "again"}); !errors.Is(err, driver.ErrExists) {
		t.Errorf("a second Revoke later = %v; want ErrExists", err)
	}
	other := sessionID(2)
	if err := rs.Revoke(ctx, driver.Revocation{Session: other, By: "op", Reason: "other", At: st.ServerTime().Latest}); err != nil {
		t.Fatalf("Revoke of another session: %v", err)
	}
	got, err := rs.Revocations(ctx)
	if err != nil {
		t.Fatalf("Revocations: %v", err)
	}
	by := make(map[string]driver.Revocation)
	for _, r := range got {
		by[r.Session] = r
	}
	if len(got) != 2 || len(by) != 2 {
		t.Fatalf("Revocations = %+v; want one record of each of %s and %s", got, id, other)
	}
	if r := by[id]; r.By != fmt.Sprintf("op%d", winner) || r.Reason != "stuck" {
		t.Errorf("record of %s = %+v; want the winner's (op%d, stuck)", id, r, winner)
	}
	if r := by[other]; r.By != "op" || r.Reason != "other" || r.At.IsZero() {
		t.Errorf("record of %s = %+v; want op, other, with its time", other, r)
	}
	// The records are not generations of a session.
	if sess, found, err := st.GetSession(ctx, other); err != nil || found {
		t.Errorf("GetSession of a revoked session never inserted = %+v, found %v, %v; want not found", sess, found, err)
	}
}

// testRevokeLeavesSessions: Revoke writes no session document: renewals
// of the revoked session's generations go on raising its expiry, never
// lowering it, and Revoked reads the record of that session only.
func (s *suite) testRevokeLeavesSessions(t *testing.T) {
	st, ctx := s.store(t)
	rs := need(t, st.Roles().Revocations, "Revocations")
	id, other := sessionID(1), sessionID(2)
	exp := expiry(st, time.Minute)
	insertSession(t, ctx, st, id, 0, exp)
	insertSession(t, ctx, st, id, 1, exp)
	insertSession(t, ctx, st, other, 0, exp)
	if _, found, err := rs.Revoked(ctx, id); err != nil || found {
		t.Fatalf("Revoked before Revoke = found %v, %v; want not found", found, err)
	}
	if found, err := st.RenewSession(ctx, id, 0, exp.Add(time.Hour)); err != nil || !found {
		t.Fatalf("RenewSession before Revoke = found %v, %v; want found", found, err)
	}
	at := st.ServerTime().Latest.Truncate(time.Millisecond) // as a store may keep it
	if err := rs.Revoke(ctx, driver.Revocation{Session: id, By: "op", Reason: "r", At: at}); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if sess, found, err := st.GetSession(ctx, id); err != nil || !found || !sess.ExpiresAt.Equal(exp.Add(time.Hour)) {
		t.Errorf("GetSession(%s) after Revoke = %+v, found %v, %v; want expiry %v, untouched", id, sess, found, err, exp.Add(time.Hour))
	}
	for gen := range 2 {
		if found, err := st.RenewSession(ctx, id, gen, exp.Add(2*time.Hour)); err != nil || !found {
			t.Errorf("RenewSession(%s, %d) after Revoke = found %v, %v; want found", id, gen, found, err)
		}
	}
	if sess, found, err := st.GetSession(ctx, id); err != nil || !found || !sess.ExpiresAt.Equal(exp.Add(2*time.Hour)) {
		t.Errorf("GetSession(%s) after renewals = %+v, found %v, %v; want expiry %v", id, sess, found, err, exp.Add(2*time.Hour))
	}
	r, found, err := rs.Revoked(ctx, id)
	if err != nil || !found || r.Session != id || r.By != "op" || r.Reason != "r" || !r.At.Equal(at) {
		t.Errorf("Revoked(%s) = %+v, found %v, %v; want op's record", id, r, found, err)
	}
	if _, found, err := rs.Revoked(ctx, other); err != nil || found {
		t.Errorf("Revoked(%s), never revoked = found %v, %v; want not found", other, found, err)
	}
}
