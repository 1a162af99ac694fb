package memory_test

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestUptimeSnapshot: the record of up-time is part of the store's
// contents: a restore brings back the record of its snapshot, and a reset
// empties it, with the sessions (a session inserted again has none).
func TestUptimeSnapshot(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	u := s.Roles().Uptime
	exp := s.ServerTime().Latest.Add(time.Minute)
	if err := s.InsertSession(ctx, driver.Session{ID: "a", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	read := func() driver.Uptime {
		t.Helper()
		got, err := u.ReadUptime(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, found, err := u.RenewSessionUp(ctx, "a", 0, exp, []driver.UpSpan{{From: exp.Add(-time.Hour), To: exp.Add(-time.Hour)}}); err != nil || !found {
		t.Fatalf("RenewSessionUp = found %v, %v", found, err)
	}
	snap := s.Snapshot()
	if _, _, err := u.RenewSessionUp(ctx, "a", 0, exp, nil); err != nil {
		t.Fatal(err)
	}
	if got := read(); len(got.Spans) != 1 {
		t.Fatalf("after a renewal with no spans: %+v; want its stamp alone", got)
	}
	s.Restore(snap)
	if got := read(); len(got.Spans) != 2 || got.Unmarked {
		t.Errorf("restored: %+v; want the snapshot's span and stamp", got)
	}
	s.Reset()
	if got := read(); len(got.Spans) != 0 || got.Unmarked {
		t.Errorf("reset: %+v; want nothing", got)
	}
	// The session inserted again is a new document: no record of the old.
	if err := s.InsertSession(ctx, driver.Session{ID: "a", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if got := read(); len(got.Spans) != 0 || !got.Unmarked {
		t.Errorf("reset, the session inserted again: %+v; want it unmarked, no spans", got)
	}
}
