package history

import "testing"

// A hold lost to an outage of the store and taken back by its process
// with the same token, nobody else holding in between, is a resume: the
// checker accepts it and counts it.
func TestCheckAcceptsAResume(t *testing.T) {
	evs := concat(
		hold("a", 1, 5, 1*ms, 950*ms, 951*ms, 950*ms),       // lost at its deadline (suspended)
		hold("a", 1, 5, 4000*ms, 4950*ms, 4500*ms, 0),       // taken back after the outage
		hold("b", 2, 6, 4600*ms, 5550*ms, 4700*ms, 0),       // the waiter, after the release
		hold("a", 1, 7, 5000*ms, 5950*ms, 5100*ms, 5050*ms), // lost again...
		hold("a", 1, 7, 8000*ms, 8950*ms, 8100*ms, 0),       // ...and taken back again
	)
	r := Check(evs, nil)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if r.Resumes != 2 || r.NumHolds != 5 {
		t.Errorf("resumes %d, holds %d; want 2 and 5", r.Resumes, r.NumHolds)
	}
}

// What is not a resume: a hold taken with the token of another's, one
// taken back after another process held in between, one taken again
// without its loss, one taken back before its loss was signalled.
func TestCheckRejectsFalseResumes(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []Event
	}{{
		name: "another process's token",
		evs:  concat(hold("a", 1, 5, 1*ms, 950*ms, 951*ms, 950*ms), hold("b", 2, 5, 4000*ms, 4950*ms, 4500*ms, 0)),
	}, {
		name: "someone held in between",
		evs: concat(hold("a", 1, 5, 1*ms, 950*ms, 951*ms, 950*ms), hold("b", 2, 6, 1000*ms, 1950*ms, 1500*ms, 0),
			hold("a", 1, 5, 4000*ms, 4950*ms, 4500*ms, 0)),
	}, {
		name: "not lost",
		evs:  concat(hold("a", 1, 5, 1*ms, 950*ms, 500*ms, 0), hold("a", 1, 5, 4000*ms, 4950*ms, 4500*ms, 0)),
	}, {
		name: "before the loss",
		evs:  concat(hold("a", 1, 5, 1*ms, 950*ms, 4100*ms, 4100*ms), hold("a", 1, 5, 4000*ms, 4950*ms, 4500*ms, 0)),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, nil)
			if !r.Has(KindTokenOrder) {
				t.Errorf("not rejected as %s: %v", KindTokenOrder, r.Violations)
			}
			if r.Resumes != 0 {
				t.Errorf("%d resumes counted", r.Resumes)
			}
		})
	}
}
