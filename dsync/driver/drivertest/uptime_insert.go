package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testUptimeInsert: InsertSessionUp inserts a session document as
// InsertSession does (found by GetSession with its expiry; a second insert
// of the generation is ErrExists, and changes nothing), marked: ReadUptime
// does not report it unmarked, and reads no span of it until a
// RenewSessionUp of it lands, whose record and stamp it then reads. A
// generation inserted by InsertSession beside it is still reported. A
// store without the role skips it.
func (s *suite) testUptimeInsert(t *testing.T) {
	st, ctx := s.store(t)
	u := need(t, st.Roles().Uptime, "Uptime")
	now := st.ServerTime().Latest.Truncate(time.Millisecond)
	early := now.Add(-time.Hour)
	a := sessionID(1)
	exp := expiry(st, time.Minute)
	if err := u.InsertSessionUp(ctx, driver.Session{ID: a, ExpiresAt: exp}); err != nil {
		t.Fatalf("InsertSessionUp(%s, 0): %v", a, err)
	}
	checkSession(t, ctx, st, a, 0, exp)
	if got := readUp(t, ctx, u, early); got.Unmarked || len(got.Spans) != 0 {
		t.Errorf("ReadUptime with a session inserted marked = %+v; want not Unmarked, no spans", got)
	}
	if err := u.InsertSessionUp(ctx, driver.Session{ID: a, ExpiresAt: exp.Add(time.Minute)}); !errors.Is(err, driver.ErrExists) {
		t.Errorf("InsertSessionUp of generation 0 again = %v; want ErrExists", err)
	}
	checkSession(t, ctx, st, a, 0, exp)

	up := []driver.UpSpan{{From: now.Add(-3 * time.Second), To: now.Add(-2 * time.Second)}}
	stamp := renewUp(t, ctx, u, a, 0, exp, up)
	checkSpans(t, "after a renewal of the marked insert", readUp(t, ctx, u, early).Spans,
		append(up, driver.UpSpan{From: stamp, To: stamp}), early)

	insertSession(t, ctx, st, a, 1, exp)
	if got := readUp(t, ctx, u, early); !got.Unmarked {
		t.Errorf("ReadUptime with generation 1 of %s inserted by InsertSession: Unmarked false", a)
	}
}
