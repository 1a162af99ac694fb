package drivertest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// gateDoc returns key's gate of bucket b, naming segment seg.
func gateDoc(key string, seg uint64, b int64, sent time.Time) driver.Doc {
	return driver.Doc{ID: driver.GateID(key, b), Key: key, Kind: driver.KindGate, Seg: seg, Bucket: b, Sent: sent}
}

// testSegmentDocs: gates, with or without a floor, and the protocol
// document keep every field, their nonces too.
func (s *suite) testSegmentDocs(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	g := gateDoc("k", 1<<50, 5893418, sent)
	floored := gateDoc("k", 1<<50, 5893419, sent)
	floored.Floor = driver.Floor{Epoch: 1<<50 + 1<<20 + 7, Nonce: "cvn0q3s2fd0s73d1ju6g", Seg: 1 << 50}
	// The protocol document's nonce names the store's history, which
	// every gate records (the engine relies on no gate of another).
	floored.Nonce = "d4ht7lq2fd0s73a1kq80"
	p := driver.Doc{ID: driver.ProtocolID, Kind: driver.KindProtocol, Span: 5 * time.Minute, Nonce: floored.Nonce, Sent: sent}
	insert(t, ctx, st, g, floored, p)
	checkStored(t, ctx, st, g)
	checkStored(t, ctx, st, floored)
	checkStored(t, ctx, st, p)
}

// testInsertEach: InsertEach creates every document whose ID is free and
// answers ErrExists for each of the others, leaving them as they were,
// whatever their place in the request.
func (s *suite) testInsertEach(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	taken := gateDoc("b", 1, 7, sent)
	insert(t, ctx, st, taken)
	other := gateDoc("b", 2, 7, sent) // the same bucket, another segment
	docs := []driver.Doc{gateDoc("a", 1, 7, sent), other, gateDoc("c", 1, 7, sent), gateDoc("a", 1, 8, sent)}
	errs := st.InsertEach(ctx, docs)
	if len(errs) != len(docs) {
		t.Fatalf("InsertEach returned %d outcomes for %d documents", len(errs), len(docs))
	}
	for i, d := range docs {
		switch {
		case d.ID == taken.ID:
			if !errors.Is(errs[i], driver.ErrExists) {
				t.Errorf("InsertEach of the existing %s = %v, want ErrExists", d.ID, errs[i])
			}
		case errs[i] != nil:
			t.Errorf("InsertEach of %s = %v, want it created", d.ID, errs[i])
		default:
			checkStored(t, ctx, st, d)
		}
	}
	checkStored(t, ctx, st, taken)
	if errs := st.InsertEach(ctx, nil); len(errs) != 0 {
		t.Errorf("InsertEach of nothing = %v, want no outcomes", errs)
	}
}

// testRecentKeys: the keys that have a gate of a bucket from the one given
// on, each once.
func (s *suite) testRecentKeys(t *testing.T) {
	st, ctx := s.store(t)
	m := need(t, st.Roles().Maintenance, "Maintenance")
	sent := now(st)
	insert(t, ctx, st,
		gateDoc("idle", 1, 10, sent), claim("idle", 1, "n", sent),
		gateDoc("busy", 1, 20, sent), gateDoc("busy", 1, 21, sent),
		gateDoc("busy2", 1, 25, sent),
	)
	keys, err := m.RecentKeys(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"busy", "busy2"}; !slices.Equal(keys, want) {
		t.Errorf("RecentKeys(20) = %q, want %q", keys, want)
	}
}

// testCompact: every document sent before the time given goes (claims,
// shadows, markers, gates), but those of the keys kept, the
// protocol document and the done records whose expiry is absent or not
// yet before that time; later documents stay.
func (s *suite) testCompact(t *testing.T) {
	st, ctx := s.store(t)
	m := need(t, st.Roles().Maintenance, "Maintenance")
	t0 := now(st)
	old := t0.Add(-time.Hour)
	c := claim("k", 1, "n", old)
	gone := []driver.Doc{c, shadow(c), end(c, driver.KindRelease, old), gateDoc("k", 1, 3, old)}
	_, laneDocs := lane("k", 3, "n-lane", 2, old)
	gone = append(gone, laneDocs...)
	late := claim("k", 2, "n", t0)
	kept := claim("k2", 1, "n", old)
	proto := driver.Doc{ID: driver.ProtocolID, Kind: driver.KindProtocol, Span: time.Minute, Sent: old}
	done := func(key string, exp time.Time) driver.Doc {
		return driver.Doc{ID: driver.DoneID(key), Key: key, Kind: driver.KindDone, Nonce: "d-" + key, Sent: old, Token: 7, Exp: exp}
	}
	forever, notYet := done("k", time.Time{}), done("k3", t0)
	gone = append(gone, done("k4", old.Add(time.Minute)))
	insert(t, ctx, st, append(gone, late, kept, proto, forever, notYet)...)
	n, err := m.Compact(ctx, t0.Add(-time.Minute), []string{"k2"})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(gone)) {
		t.Errorf("Compact deleted %d documents, want %d", n, len(gone))
	}
	for _, d := range gone {
		if _, found := get(t, ctx, st, d.ID); found {
			t.Errorf("after Compact: %s (%s) is still there", d.ID, d.Kind)
		}
	}
	for _, d := range []driver.Doc{late, kept, proto, forever, notYet} {
		if _, found := get(t, ctx, st, d.ID); !found {
			t.Errorf("after Compact: %s is gone", d.ID)
		}
	}
}

// testDropGates: the gates of buckets below the one given go, of every
// key, if sent before the time given; later gates, gates sent since (a
// drop landing late) and other documents stay.
func (s *suite) testDropGates(t *testing.T) {
	st, ctx := s.store(t)
	m := need(t, st.Roles().Maintenance, "Maintenance")
	sent := now(st)
	low, high := gateDoc("a", 1, 9, sent), gateDoc("a", 1, 10, sent)
	low2 := gateDoc("b", 1, 2, sent)
	since := gateDoc("c", 1, 2, sent.Add(2*time.Second))
	c := claim("a", 1, "n", sent)
	insert(t, ctx, st, low, high, low2, since, c)
	// A second apart: a driver keeps times to the millisecond.
	if err := m.DropGates(ctx, 10, sent.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []driver.Doc{low, high, low2, since, c} {
		want := d.ID == high.ID || d.ID == c.ID || d.ID == since.ID
		if _, found := get(t, ctx, st, d.ID); found != want {
			t.Errorf("after DropGates(10): %s exists %v, want %v", d.ID, found, want)
		}
	}
}
