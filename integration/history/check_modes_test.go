package history

import "testing"

// moded sets the mode, weight and limit of a hold's acquire event.
func moded(evs []Event, mode string, weight, limit int64) []Event {
	evs[0].Mode, evs[0].Weight, evs[0].Limit = mode, weight, limit
	return evs
}

// Shared holds may overlap each other, and weighted ones while their
// weights fit the limit; every other overlap, and a token order broken
// between holds that conflict, is a violation.
func TestCheckModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []Event
		want string // "" for none
	}{{
		name: "readers overlap, begin out of token order",
		evs: concat(moded(hold("a", 1, 2, 1*ms, 950*ms, 500*ms, 0), ModeShared, 0, 0),
			moded(hold("b", 2, 1, 100*ms, 1050*ms, 600*ms, 0), ModeShared, 0, 0)),
	}, {
		name: "a writer after readers",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeShared, 0, 0),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeShared, 0, 0),
			hold("c", 3, 3, 700*ms, 1650*ms, 800*ms, 0)),
	}, {
		name: "a writer while a reader holds",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeShared, 0, 0),
			hold("c", 3, 2, 400*ms, 1350*ms, 800*ms, 0)),
		want: KindOverlap,
	}, {
		name: "a reader while a writer holds",
		evs: concat(hold("c", 3, 1, 1*ms, 950*ms, 500*ms, 0),
			moded(hold("a", 1, 2, 400*ms, 1350*ms, 800*ms, 0), ModeShared, 0, 0)),
		want: KindOverlap,
	}, {
		name: "a writer's token below a reader's begun before",
		evs: concat(moded(hold("a", 1, 5, 1*ms, 950*ms, 100*ms, 0), ModeShared, 0, 0),
			hold("c", 3, 4, 200*ms, 1150*ms, 300*ms, 0)),
		want: KindTokenOrder,
	}, {
		name: "weights within the limit",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 2, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeWeighted, 1, 3)),
	}, {
		name: "weights over the limit",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 2, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeWeighted, 2, 3)),
		want: KindOverlap,
	}, {
		name: "weighted holds of different limits",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeWeighted, 1, 2)),
		want: KindOverlap,
	}, {
		name: "weighted holds of different limits in turn",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 100*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 3, 200*ms, 1150*ms, 600*ms, 0), ModeWeighted, 1, 2),
			moded(hold("c", 3, 2, 300*ms, 1250*ms, 700*ms, 0), ModeWeighted, 1, 2)),
	}, {
		name: "a limit's token below another limit's begun before",
		evs: concat(moded(hold("a", 1, 5, 1*ms, 950*ms, 100*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 4, 200*ms, 1150*ms, 300*ms, 0), ModeWeighted, 1, 2)),
		want: KindTokenOrder,
	}, {
		name: "a small claim after a larger one that waits, with room for both",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 600*ms, 1550*ms, 800*ms, 0), ModeWeighted, 1, 3),
			moded(hold("c", 3, 3, 100*ms, 1050*ms, 200*ms, 0), ModeWeighted, 1, 3)),
	}, {
		name: "a small claim passes a larger one waiting for room",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 600*ms, 1550*ms, 800*ms, 0), ModeWeighted, 2, 3),
			moded(hold("c", 3, 3, 100*ms, 1050*ms, 200*ms, 0), ModeWeighted, 1, 3)),
		want: KindFIFO,
	}, {
		name: "a small claim after a larger waiting one that lost its session",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 600*ms, 550*ms, 0, 0), ModeWeighted, 2, 3),
			moded(hold("c", 3, 3, 100*ms, 1050*ms, 200*ms, 0), ModeWeighted, 1, 3)),
	}, {
		name: "a weighted hold with a reader",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeShared, 0, 0)),
		want: KindOverlap,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, nil)
			switch {
			case tc.want == "" && !r.OK():
				t.Fatalf("violations: %v", r.Violations)
			case tc.want != "" && (r.OK() || r.Violations[0].Kind != tc.want):
				t.Fatalf("violations %v, want %s", r.Violations, tc.want)
			}
		})
	}
}
