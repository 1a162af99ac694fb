package apisim

import (
	"testing"
	"time"
)

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

// TestCheckExpiredStays judges a Client's Queue reads of a claim found
// Expired: it stays Expired for two TTLs past the highest expiry the
// reads that reported it Expired reported, which a late renewal raises
// (statuspage.ClaimInfo.Expired), and may read live past that.
func TestCheckExpiredStays(t *testing.T) {
	read := func(ms int, expired bool, expiresMs int) *QueueRead {
		c := ReadClaim{Token: 1, Nonce: "n", Expired: expired, ExpiresAt: at(expiresMs), TTL: time.Second}
		return &QueueRead{Proc: 1, Inc: 1, Key: "m0", Call: at(ms - 5), T: at(ms), Claims: []ReadClaim{c}}
	}
	runCases(t, CheckWatch, []checkCase{
		{"live within two TTLs of the expiry found", History{QueueReads: []*QueueRead{read(1000, true, 900), read(2800, false, 900)}}, 1},
		{"live past them", History{QueueReads: []*QueueRead{read(1000, true, 900), read(3000, false, 900)}}, 0},
		{"live within two TTLs of a raised expiry reported", History{QueueReads: []*QueueRead{read(1000, true, 900), read(1500, true, 1400), read(3100, false, 1400)}}, 1},
		{"live past the raised one's", History{QueueReads: []*QueueRead{read(1000, true, 900), read(1500, true, 1400), read(3500, false, 1400)}}, 0},
		{"live after an emptying", History{Emptyings: []time.Time{at(2000)}, QueueReads: []*QueueRead{read(1000, true, 900), read(2800, false, 900)}}, 0},
	})
}
