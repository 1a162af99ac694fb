package drivertest

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testDone: a key's done record (KindDone) is stored with every field,
// and answers ErrExists to a second insert.
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

}
