package apisim

import "testing"

// TestCheckWatchRev judges the values Leader reports within a term: the
// Rev never goes back, but to the Rev 0 and empty value of a member
// status that could not be read.
func TestCheckWatchRev(t *testing.T) {
	obs := func(source string, token, rev uint64, value string, ms int) *Observation {
		return &Observation{Source: source, Key: "e", Token: token, Leader: "a", Rev: rev, Value: value, Call: at(ms - 5), T: at(ms), Landed: at(0)}
	}
	runCases(t, CheckWatch, []checkCase{
		{"revs rise", History{Observations: []*Observation{obs(WatchLeader, 1, 0, "", 10), obs(WatchLeader, 1, 1, "v1", 20), obs(WatchLeader, 1, 1, "v1", 30), obs(WatchLeader, 1, 2, "v2", 40)}}, 0},
		{"a rev goes back", History{Observations: []*Observation{obs(WatchLeader, 1, 2, "v2", 10), obs(WatchLeader, 1, 1, "v1", 20)}}, 1},
		{"the status unread", History{Observations: []*Observation{obs(WatchLeader, 1, 2, "v2", 10), obs(WatchLeader, 1, 0, "", 20)}}, 0},
		{"a new term starts again", History{Observations: []*Observation{obs(WatchLeader, 1, 2, "v2", 10), obs(WatchLeader, 2, 1, "v1", 20)}}, 0},
		{"two watchers", History{Observations: []*Observation{obs(WatchLeader, 1, 2, "v2", 10), obs(WatchStatus, 1, 1, "v1", 20)}}, 0},
	})
}
