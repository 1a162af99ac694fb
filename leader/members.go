package leader

import (
	"context"
	"time"
)

// A MemberStore keeps the candidates' status (Member) beside the leases.
//
// It serves Members, the Version and Value that Leader reports, and
// Proclaim. The leases themselves are locks of the Client an Election is
// made on. Who leads is read from them (Election.Leader), never from a
// MemberStore. leadermongo.NewStore gives one on MongoDB, and
// leadertest.NewMemoryMembers one in memory for tests. An Election given
// none (WithMembers) elects and reports who leads all the same.
type MemberStore interface {
	// PutMember creates or replaces the status document of member m.ID of
	// election, setting its LastSeen to the store's current time. Only
	// the member itself writes its document. A write applied late, after
	// a later PutMember of the same member, must change nothing, and must
	// not make the member look fresher than when the write was sent.
	PutMember(ctx context.Context, election string, m Member) error

	// Member returns the latest status of member id of election; found
	// is false when it has none.
	Member(ctx context.Context, election, id string) (m Member, found bool, err error)

	// Members returns the members of election whose LastSeen is at most
	// maxAge old, in the store's time, ordered by ID.
	Members(ctx context.Context, election string, maxAge time.Duration) ([]Member, error)

	// DeleteMember removes member id's status document.
	DeleteMember(ctx context.Context, election, id string) error
}

// A Preflighter is a MemberStore that checks whether a candidate may
// campaign at all.
//
// It checks before each campaign. leadermongo's refuses while a candidate
// of an older release, which keeps its lease elsewhere, holds or waits
// for the election. A refusal wraps ErrRefused, and Campaign fails with
// it. Any other error is the store failing to answer. Campaign logs it
// and asks again, with backoff, while its context lives (as a Lock does
// with the store's errors).
type Preflighter interface {
	Preflight(ctx context.Context, election string) error
}

// Info describes a leader.
type Info struct {
	ID      string    // the candidate's identity, unique per Election value
	Host    string    // host name of the leader's process
	PID     int       // process id of the leader's process
	Version string    // application version the leader reported (WithVersion)
	Since   time.Time // when this term's claim was queued, in the store's time
	Token   uint64    // fencing token of this term; increases from term to term
	// Value is what the leader advertises: its WithValue value, until it
	// proclaims another in this term (Proclaim). Rev orders the values of
	// one term: 0 for the WithValue value, then one more for each
	// proclamation. Empty and 0 when the leader's member status could not
	// be read.
	Value string
	Rev   uint64
}

// Member is the status a candidate reports about itself.
// It is refreshed every heartbeat interval while it campaigns or leads.
type Member struct {
	ID       string
	Host     string
	PID      int
	Version  string
	Leader   bool      // whether it led when it last reported
	LastSeen time.Time // set by the MemberStore, in its time

	// Value is the member's WithValue value. Term is the term (token) in
	// which it last led, Proclaimed its value in that term and Rev the
	// number of proclamations it made in it (memberValue reads them).
	Value      string
	Term       uint64
	Proclaimed string
	Rev        uint64

	// Priority is the member's WithPriority (0 unless set): with the
	// steering options, a live candidate of higher priority leads first.
	Priority int

	// Handover, while it leads and transfers its leadership (Transfer),
	// names the candidate it hands over to, in its term Term.
	Handover Handover
}

// memberValue returns the value and Rev the leader of term advertises, by
// its status m.
//
// It is the value proclaimed in term if m is of that term. Else (the term
// began after m was written) it is the WithValue value. current is false
// when m is of a later term: term has ended, and the read of the leader
// was stale; read it again. Leader fills Info.Value and Info.Rev with it.
func memberValue(term uint64, m Member) (value string, rev uint64, current bool) {
	switch {
	case m.Term == term:
		return m.Proclaimed, m.Rev, true
	case m.Term > term:
		return "", 0, false
	}
	return m.Value, 0, true
}
