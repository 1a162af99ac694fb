package leader

import (
	"github.com/go-dsync/dsync/leader/internal/lease"
	"testing"
)

// TestTransferQueueReads: what the leader and the waiting candidates
// read from the lease's queue. The leader hands over only when the
// candidate's claim is the first live one after its own term's; a
// waiting candidate steps aside only for a handover of the term that
// holds (a late handover, of a term that ended, is ignored), and only
// if the candidate waits behind it.
func TestTransferQueueReads(t *testing.T) {
	claim := func(owner string, token uint64, holds, expired bool) lease.Claim {
		return lease.Claim{Owner: owner, Token: token, Holds: holds, Expired: expired}
	}
	q := []lease.Claim{
		claim("old", 5, false, true), // expired, not ended yet
		claim("L", 7, true, false),
		claim("a", 8, false, false),
		claim("x", 9, false, true),
		claim("b", 10, false, false),
	}
	for _, tt := range []struct {
		self, to     string
		token        uint64
		next, queued bool
	}{
		{"L", "a", 7, true, true},
		{"L", "b", 7, false, true},  // a is ahead
		{"L", "c", 7, false, false}, // c has no claim
		{"L", "a", 6, false, true},  // not this term's claim that holds
		{"M", "a", 7, false, true},  // another leader's claim
		{"L", "x", 7, false, false}, // x's claim expired
	} {
		next, queued := nextAfter(q, tt.self, tt.token, tt.to)
		if next != tt.next || queued != tt.queued {
			t.Errorf("nextAfter(%s, %d, to %s) = %v, %v; want %v, %v", tt.self, tt.token, tt.to, next, queued, tt.next, tt.queued)
		}
	}
	// a (ahead of b) steps aside for a handover to b in L's term 7.
	if !behindMe(q, "L", Handover{To: "b", Term: 7}, "a") {
		t.Error("a does not step aside for a handover to b, queued behind it")
	}
	for _, tt := range []struct {
		name, leader, self string
		h                  Handover
	}{
		{"the handover's term ended", "L", "a", Handover{To: "b", Term: 6}},
		{"the writer does not hold", "M", "a", Handover{To: "b", Term: 7}},
		{"the candidate waits ahead", "L", "b", Handover{To: "a", Term: 7}},
		{"the candidate has no claim", "L", "a", Handover{To: "c", Term: 7}},
		{"this candidate has no claim", "L", "c", Handover{To: "b", Term: 7}},
	} {
		if behindMe(q, tt.leader, tt.h, tt.self) {
			t.Errorf("%s: %s steps aside", tt.name, tt.self)
		}
	}
}
