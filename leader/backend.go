package leader

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// Backend is the store an Election runs on: a dsync.Backend for the
// leadership lease, plus who leads and the members' status documents.
// leader/mongo implements it; NewMemoryBackend gives one for unit tests.
//
// The lock keys of a Backend are the elections' own: keep plain locks on
// another dsync.Backend, or the lock LockKey(name) would be the lease of
// the election name. The backends of this module do: leadermongo keeps
// the leases in a collection of their own, and a MemoryBackend is a store
// of its own, apart from any dsync.MemoryBackend.
type Backend interface {
	dsync.Backend

	// Leader returns the current leader of election: the live holder of
	// LockKey(election), with the status its member document reports.
	// It returns an error wrapping ErrNoLeader when nobody leads.
	Leader(ctx context.Context, election string) (Info, error)

	// PutMember creates or replaces the status document of member m.ID of
	// election, setting its LastSeen to the backend's current time. Only
	// the member itself writes its document. A write applied late, after
	// a later PutMember of the same member, must change nothing, and must
	// not make the member look fresher than when the write was sent.
	PutMember(ctx context.Context, election string, m Member) error

	// Members returns the members of election whose LastSeen is at most
	// maxAge old, in the backend's time, ordered by ID.
	Members(ctx context.Context, election string, maxAge time.Duration) ([]Member, error)

	// DeleteMember removes member id's status document.
	DeleteMember(ctx context.Context, election, id string) error
}

// LockKey is the dsync key, in its Backend, whose holder leads election.
// A plain lock of that name on another dsync.Backend is another lock.
func LockKey(election string) string { return "leader/" + election }

// Info describes a leader.
type Info struct {
	ID      string    // the candidate's identity, unique per Election value
	Host    string    // host name of the leader's process
	PID     int       // process id of the leader's process
	Version string    // application version the leader reported (WithVersion)
	Since   time.Time // when this term began, in the backend's time
	Token   uint64    // fencing token of this term; increases from term to term
}

// Member is the status a candidate reports about itself, refreshed every
// heartbeat interval while it campaigns or leads.
type Member struct {
	ID       string
	Host     string
	PID      int
	Version  string
	Leader   bool      // whether it led when it last reported
	LastSeen time.Time // set by the backend, in its time
}
