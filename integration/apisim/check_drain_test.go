package apisim

import (
	"testing"
	"time"
)

// TestCheckDrain judges PromiseDrain on small histories: member "d" of
// process 0 drained at 1000 ms, heartbeats of 100 ms, member "x" of
// process 1 live throughout to take its shards.
func TestCheckDrain(t *testing.T) {
	const hb = 100 * time.Millisecond
	member := func(id string, proc, join, gone int) *Action {
		return &Action{Actor: PartitionActorName, Key: id, Proc: proc, Call: at(join), Return: at(gone), Outcome: memberLeft}
	}
	drain := func(id string, landed int, undrain bool) *Action {
		a := &Action{Actor: DrainActorName, Key: id, Call: at(landed - 5), Return: at(landed), Outcome: drainLanded}
		if undrain {
			a.Outcome = undrainLanded
		}
		return a
	}
	term := func(id string, proc, shard, start, end int) *Term {
		return &Term{Proc: proc, Member: id, Shard: shard, Start: at(start), End: at(end)}
	}
	members := []*Action{member("d", 0, 0, 5000), member("x", 1, 0, 5000)}
	for _, c := range []struct {
		name  string
		calm  bool
		extra []*Action
		terms []*Term
		fault *ProcFault
		want  int
	}{
		{"moved off in time", true, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 0, 100, 1150), term("x", 1, 0, 1160, 4000)}, nil, 0},
		{"a term begun within two heartbeats", false, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 1, 1150, 1180)}, nil, 0},
		{"a term begun after two heartbeats", false, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 1, 1250, 1280)}, nil, 1},
		{"a term begun after the undrain", false, []*Action{drain("d", 1000, false), drain("d", 1500, true)}, []*Term{term("d", 0, 1, 1600, 1700)}, nil, 0},
		{"a term begun two heartbeats after a pause that began before them", false, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 1, 1350, 1400)},
			&ProcFault{Proc: 0, Kind: "pause", From: at(1100), To: at(1200)}, 0},
		{"a term begun two heartbeats after another process's pause", false, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 1, 1350, 1400)},
			&ProcFault{Proc: 1, Kind: "pause", From: at(1100), To: at(1200)}, 1},
		{"still owned three heartbeats after", true, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 0, 100, 1400)}, nil, 1},
		{"still owned, but not judged: no other member not drained", true, []*Action{drain("x", 900, false), drain("d", 1000, false)}, []*Term{term("d", 0, 0, 100, 1400)}, nil, 0},
		{"still owned, but not judged: a fault near", true, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 0, 100, 1400)},
			&ProcFault{Proc: 1, Kind: "hang", From: at(900), To: at(950)}, 0},
		{"still owned, not judged: not calm", false, []*Action{drain("d", 1000, false)}, []*Term{term("d", 0, 0, 100, 1400)}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{Actions: append(append([]*Action{}, members...), c.extra...), Terms: c.terms}
			if c.fault != nil {
				h.ProcFaults = []ProcFault{*c.fault}
			}
			ps := &PartitionSim{Shards: 2}
			byShard := make([][]*Term, ps.Shards)
			for _, x := range h.Terms {
				byShard[x.Shard] = append(byShard[x.Shard], x)
			}
			ms := []membership{{"d", 0, at(0), at(5000), false}, {"x", 1, at(0), at(5000), false}}
			var f DrainFigures
			vs := ps.checkDrains(h, ms, byShard, hb, 3*hb, c.calm, &f)
			if len(vs) != c.want {
				t.Errorf("%d violations, want %d: %v", len(vs), c.want, vs)
			}
		})
	}
}
