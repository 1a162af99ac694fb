package drivertest

import (
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// gateDoc returns key's gate of bucket b, naming segment seg.
func gateDoc(key string, seg uint64, b int64, sent time.Time) driver.Doc {
	return driver.Doc{ID: driver.GateID(key, b), Key: key, Kind: driver.KindGate, Seg: seg, Bucket: b, Sent: sent}
}

// testSegmentDocs: gates and the protocol document keep every field.
func (s *suite) testSegmentDocs(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	g := gateDoc("k", 1<<50, 5893418, sent)
	p := driver.Doc{ID: driver.ProtocolID, Kind: driver.KindProtocol, Span: 5 * time.Minute, Sent: sent}
	insert(t, ctx, st, g, p)
	checkStored(t, ctx, st, g)
	checkStored(t, ctx, st, p)
}

// testFloorOfSegment: a floor of one segment is not another's.
func (s *suite) testFloorOfSegment(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	if err := st.RaiseFloor(ctx, "k", driver.Floor{Epoch: 1<<40 + 16, Nonce: "hi", Seg: 1 << 40}, sent); err != nil {
		t.Fatal(err)
	}
	raise(t, ctx, st, "k", 8, sent)
	checkFloor(t, ctx, st, "k", 0, 8)
	f, found, err := st.Floor(ctx, "k", 1<<40, 0)
	if err != nil || !found || f.Epoch != 1<<40+16 || f.Seg != 1<<40 {
		t.Errorf("Floor(k, seg 2^40) = %+v, %v, %v; want the floor 2^40+16 of that segment", f, found, err)
	}
	if _, found, err := st.Floor(ctx, "k", 7, 0); err != nil || found {
		t.Errorf("Floor(k, seg 7) = found %v, %v; want none", found, err)
	}
}

// testPruneKeeps: Prune deletes below, but never the epoch it keeps (the
// segment's first), nor another key's documents.
func (s *suite) testPruneKeeps(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	const seg = 100
	var docs []driver.Doc
	for e := uint64(98); e <= 104; e++ {
		c := claim("k", e, "n", sent)
		c.Seg = seg
		docs = append(docs, c, shadow(c))
	}
	other := claim("k2", 101, "n", sent)
	docs = append(docs, other)
	insert(t, ctx, st, docs...)
	if err := st.Prune(ctx, "k", seg, 103, sent.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		want := d.Key != "k" || d.Epoch == seg || d.Epoch >= 103
		if _, found := get(t, ctx, st, d.ID); found != want {
			t.Errorf("after Prune(k, keep %d, below 103): %s exists %v, want %v", seg, d.ID, found, want)
		}
	}
}

// testIdleKeys: the keys with a document sent before the time given and
// no gate of a bucket from the one given on.
func (s *suite) testIdleKeys(t *testing.T) {
	st, ctx := s.store(t)
	t0 := now(st)
	old, recent := t0.Add(-time.Hour), t0
	insert(t, ctx, st,
		claim("idle", 1, "n", old), gateDoc("idle", 1, 10, old), // old claim, old gate: idle
		claim("busy", 1, "n", old), gateDoc("busy", 1, 20, old), // a gate of bucket 20: in use
		claim("young", 1, "n", recent), // nothing old
		claim("idle2", 1, "n", old),    // old, no gate at all
		driver.Doc{ID: driver.ProtocolID, Kind: driver.KindProtocol, Span: time.Minute, Sent: old},
	)
	keys, err := st.IdleKeys(ctx, t0.Add(-time.Minute), 20, 10)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"idle", "idle2"}; !slices.Equal(keys, want) {
		t.Errorf("IdleKeys = %q, want %q", keys, want)
	}
	if keys, err := st.IdleKeys(ctx, t0.Add(-time.Minute), 20, 1); err != nil || len(keys) != 1 {
		t.Errorf("IdleKeys with limit 1 = %q, %v; want one key", keys, err)
	}
}

// testCompact: every document of the keys given sent before the time
// given goes (claims, shadows, markers, floors, gates); later ones, other
// keys' and the protocol document stay.
func (s *suite) testCompact(t *testing.T) {
	st, ctx := s.store(t)
	t0 := now(st)
	old := t0.Add(-time.Hour)
	c := claim("k", 1, "n", old)
	gone := []driver.Doc{c, shadow(c), end(c, driver.KindRelease, old), gateDoc("k", 1, 3, old)}
	late := claim("k", 2, "n", t0)
	other := claim("k2", 1, "n", old)
	proto := driver.Doc{ID: driver.ProtocolID, Kind: driver.KindProtocol, Span: time.Minute, Sent: old}
	insert(t, ctx, st, append(gone, late, other, proto)...)
	raise(t, ctx, st, "k", 1, old)
	if err := st.Compact(ctx, []string{"k"}, t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, d := range gone {
		if _, found := get(t, ctx, st, d.ID); found {
			t.Errorf("after Compact(k): %s (%s) is still there", d.ID, d.Kind)
		}
	}
	for _, d := range []driver.Doc{late, other, proto} {
		if _, found := get(t, ctx, st, d.ID); !found {
			t.Errorf("after Compact(k): %s is gone", d.ID)
		}
	}
	checkFloor(t, ctx, st, "k", 0, 0)
}

// testDropGates: the gates of buckets below the one given go, of every
// key; later gates and other documents stay.
func (s *suite) testDropGates(t *testing.T) {
	st, ctx := s.store(t)
	sent := now(st)
	low, high := gateDoc("a", 1, 9, sent), gateDoc("a", 1, 10, sent)
	low2 := gateDoc("b", 1, 2, sent)
	c := claim("a", 1, "n", sent)
	insert(t, ctx, st, low, high, low2, c)
	if err := st.DropGates(ctx, 10); err != nil {
		t.Fatal(err)
	}
	for _, d := range []driver.Doc{low, high, low2, c} {
		want := d.ID == high.ID || d.ID == c.ID
		if _, found := get(t, ctx, st, d.ID); found != want {
			t.Errorf("after DropGates(10): %s exists %v, want %v", d.ID, found, want)
		}
	}
}
