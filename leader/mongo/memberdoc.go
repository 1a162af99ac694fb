package leadermongo

// A member's status as it is stored: its documents (memberDoc), their
// IDs, and the counter that orders a member's writes.

import (
	"strconv"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/leader"
)

// memberDoc is one document of a candidate's status: one generation of
// its member record (see the package doc).
type memberDoc struct {
	ID       string    `bson:"_id"` // memberGenID(election, member, n); memberID before generations
	Election string    `bson:"election"`
	Member   string    `bson:"member"`
	Host     string    `bson:"host"`
	PID      int       `bson:"pid"`
	Version  string    `bson:"version"`
	Leader   bool      `bson:"leader"`
	LastSeen time.Time `bson:"lastSeen"`
	// Seq orders the writes of the member's process: the member's state is
	// that of its document with the highest Seq.
	Seq int64 `bson:"seq"`
	// What the member advertises (leader.Member): its WithValue value,
	// the term it last led, its value in that term and the number of
	// proclamations in it. Absent in documents of an older release.
	Value      string `bson:"value,omitempty"`
	Term       int64  `bson:"term,omitempty"`
	Proclaimed string `bson:"proclaimed,omitempty"`
	Rev        int64  `bson:"rev,omitempty"`
	// The leader's handover (leader.Handover) while it transfers its
	// leadership: to whom, in which of its terms. Written with the rest
	// of the status, so ordered by Seq as it is.
	HandoverTo   string `bson:"handoverTo,omitempty"`
	HandoverTerm int64  `bson:"handoverTerm,omitempty"`
	// The member's priority (leader.WithPriority); absent when 0.
	Priority int `bson:"priority,omitempty"`
}

// memberSeq numbers member writes in this process: the one piece of
// package-level state in dsync's library packages (docs/architecture.md
// says why). Only a member's own process writes its documents, so a
// process-wide counter orders them whichever Store (and client) sends
// them: a member whose write had an unknown outcome may write next
// through another, and a counter per Store would start that one below
// the stalled write, which could then land last and win
// (TestLateMemberWriteChangesNothing fails so). It also names the
// member's generations, so no two are ever named alike.
var memberSeq atomic.Int64

func memberID(election, id string) string { return election + "/" + id }

// memberGenID is the _id of the generation of member id first written
// by the write numbered seq. (Before generations, a member had one
// document, _id memberID(election, id); readers take those too.)
func memberGenID(election, id string, seq int64) string {
	return memberID(election, id) + "~" + strconv.FormatInt(seq, 10)
}

// memberFilter selects every document of member id of election.
func memberFilter(election, id string) bson.D {
	return bson.D{{Key: "election", Value: election}, {Key: "member", Value: id}}
}

func (d *memberDoc) member() leader.Member {
	return leader.Member{ID: d.Member, Host: d.Host, PID: d.PID, Version: d.Version, Leader: d.Leader, LastSeen: d.LastSeen,
		Value: d.Value, Term: uint64(d.Term), Proclaimed: d.Proclaimed, Rev: uint64(d.Rev),
		Handover: leader.Handover{To: d.HandoverTo, Term: uint64(d.HandoverTerm)}, Priority: d.Priority}
}
