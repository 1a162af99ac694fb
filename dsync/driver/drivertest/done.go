package drivertest

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testDone: a key's done record (KindDone) is stored with every field,
// answers ErrExists to a second insert, and is no claim or floor: Newest,
// Floor and Prune never see it.
func (s *suite) testDone(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	c := claim("k", 2, "n2", sent)
	rec := driver.Doc{ID: driver.DoneID("k"), Key: "k", Kind: driver.KindDone, Nonce: "d1", Session: c.Session,
		Owner: "owner-n2", Host: "host.example", PID: 4242, Sent: sent.Add(time.Second), Token: 1 << 40}
	insert(t, ctx, st, claim("k", 1, "n1", sent), c, rec)
	checkStored(t, ctx, st, rec)
	other := rec
	other.Nonce, other.Token = "d2", 7
	if err := st.Insert(ctx, other); err != driver.ErrExists {
		t.Errorf("a second done record = %v, want ErrExists", err)
	}
	checkStored(t, ctx, st, rec)

	if d, found, err := st.Newest(ctx, "k"); err != nil || !found || d.ID != c.ID {
		t.Errorf("Newest = %s, %v, %v; want %s", d.ID, found, err, c.ID)
	}
	if f, found, err := st.Floor(ctx, "k", testSeg, 0); err != nil || found {
		t.Errorf("Floor = %+v, %v, %v; want none", f, found, err)
	}
	if err := st.Prune(ctx, "k", testSeg, 1<<50, sent.Add(time.Hour)); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	checkStored(t, ctx, st, rec)
	if _, found := get(t, ctx, st, c.ID); found {
		t.Errorf("Prune left %s", c.ID)
	}
}
