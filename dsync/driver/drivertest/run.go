package drivertest

import (
	"errors"
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// testGetRun (Roles.Runs, where it reads runs on this server): a run returns exactly the claims
// and end markers of its key and epochs, in increasing order of epoch,
// each claim before its markers, with every field; not the documents of
// another key whose name begins with the key's, nor gates, nor epochs
// outside the run. A run across a change in the epochs' number of digits
// is whole too.
func (s *suite) testGetRun(t *testing.T) {
	st, ctx := s.store(t)
	rr := need(t, st.Roles().Runs, "Runs")
	if _, err := rr.GetRun(ctx, "k", 1, 2); errors.Is(err, driver.ErrRunsUnsupported) {
		t.Skip("GetRun: ErrRunsUnsupported on this server")
	}
	sent := now(st)
	base := uint64(1<<40) - 3 // 1099511627773: the run crosses no power of ten
	var want, sixth []driver.Doc
	var docs []driver.Doc
	for i := range uint64(6) {
		c := claim("k", base+i, "n"+string(rune('a'+i)), sent)
		docs = append(docs, c, shadow(c))
		inRun := i >= 1 && i <= 4
		if inRun {
			want = append(want, c)
		}
		switch i % 3 {
		case 1:
			m := end(c, driver.KindRelease, sent)
			m.Clear = true
			docs = append(docs, m)
			if inRun {
				want = append(want, m)
			}
		case 2:
			m := end(c, driver.KindDead, sent)
			docs = append(docs, m)
			if inRun {
				want = append(want, m)
			}
			sixth = []driver.Doc{c, m} // set last by the sixth claim (i = 5)
		}
	}
	// A read lane rooted in the run, its root and the root's end marker
	// in the run like any claim's; its slots, their shadows and markers
	// and its seal, which share the root's epoch, may come too.
	root, laneDocs := lane("k", base+6, "n-lane", 3, sent)
	rootEnd := end(root, driver.KindRelease, sent)
	docs = append(docs, append(laneDocs, rootEnd)...)
	// Documents the run must not return: another key's whose name begins
	// with "k@" (its claims' IDs lie among k's), and a gate.
	other := claim("k@"+"1099511627775", 2, "n-other", sent)
	docs = append(docs, other, gateDoc("k", testSeg, 1, sent))
	insert(t, ctx, st, docs...)
	checkRun(t, "GetRun(k, 2nd to 5th)", want, func() ([]driver.Doc, error) { return rr.GetRun(ctx, "k", base+1, base+4) })
	checkRun(t, "GetRun(k, 6th to the lane's root)", append(sixth, root, rootEnd),
		func() ([]driver.Doc, error) { return rr.GetRun(ctx, "k", base+5, base+6) })

	// Epochs from 998 to 1001: four digits and three.
	var across []driver.Doc
	for e := uint64(998); e <= 1001; e++ {
		c := claim("x", e, "n", sent)
		m := end(c, driver.KindWithdraw, sent)
		insert(t, ctx, st, c, shadow(c), m)
		across = append(across, c, m)
	}
	checkRun(t, "GetRun(x, 998, 1001)", across, func() ([]driver.Doc, error) { return rr.GetRun(ctx, "x", 998, 1001) })
	checkRun(t, "GetRun(missing key)", nil, func() ([]driver.Doc, error) { return rr.GetRun(ctx, "nothing", 1, 1<<50) })
}

// checkRun compares the run get returns, skipping shadows and the
// documents of read lanes, with want.
func checkRun(t *testing.T, what string, want []driver.Doc, get func() ([]driver.Doc, error)) {
	t.Helper()
	got, err := get()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var kept []driver.Doc
	for _, d := range got {
		switch d.Kind {
		case driver.KindShadow, driver.KindSlot, driver.KindSlotShadow, driver.KindSlotEnd, driver.KindSlotDead, driver.KindSeal:
		default:
			kept = append(kept, d)
		}
	}
	if len(kept) != len(want) {
		var ids []string
		for _, d := range kept {
			ids = append(ids, d.ID)
		}
		t.Fatalf("%s: %d documents %v, want %d", what, len(kept), ids, len(want))
	}
	for i := range want {
		if kept[i].ID != want[i].ID {
			t.Errorf("%s: document %d is %s, want %s", what, i, kept[i].ID, want[i].ID)
			continue
		}
		if diff := docDiff(kept[i], want[i]); diff != "" {
			t.Errorf("%s: %s: %s", what, want[i].ID, diff)
		}
	}
}
