package dsyncmongo

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestGetSessionKeepsToItsOwnDocuments: GetSession reads one range of
// _ids, which also holds the documents of any session whose ID begins
// with the one asked for; it answers from the session's own generations
// only. (The protocol's session IDs are xids of one length, which no other
// begins with; a Store is not told so.)
func TestGetSessionKeepsToItsOwnDocuments(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, time.Minute)
	s := newBackend(t, mongotest.NewDatabase(t)).s
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	exp := s.ServerTime().Latest.Add(time.Minute).Truncate(time.Millisecond)
	for _, d := range []driver.Session{
		{ID: "c1", Gen: 2, ExpiresAt: exp},
		{ID: "c10", Gen: 0, ExpiresAt: exp.Add(time.Hour)},
		{ID: "c1x", Gen: 0, ExpiresAt: exp.Add(2 * time.Hour)},
		{ID: "c10", Gen: 3, ExpiresAt: exp.Add(3 * time.Hour)},
	} {
		if err := s.InsertSession(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	got, found, err := s.GetSession(ctx, "c1")
	if err != nil || !found || got.Gen != 2 || !got.ExpiresAt.Equal(exp) || got.HasFirst {
		t.Errorf("GetSession(c1) = %+v, found %v, %v; want generation 2 expiring at %v, without generation 0", got, found, err, exp)
	}
	if got, found, err := s.GetSession(ctx, "c"); err != nil || found {
		t.Errorf("GetSession(c) = %+v, found %v, %v; want none", got, found, err)
	}
	for docID, want := range map[string]bool{"c1": true, "c1~2": true, "c1~12": true, "c10": false, "c1~": false, "c1~0": false, "c1~02": false, "c1~-1": false, "c1x": false} {
		if _, ok := sessionGenOf("c1", docID); ok != want {
			t.Errorf("sessionGenOf(c1, %q) = %v, want %v", docID, ok, want)
		}
	}
}
