package driver

import (
	"context"
	"time"
)

// Revocation is an operator's record that a session (a process's lease)
// must end. It says who asked, when and why. dsync revoke writes it, and
// the revoked process reads it and retires the session. dsync status, the
// status page and statuspage.Reader.Revocations list it.
//
// A revocation is a document of its own, inserted once and never
// changed. A store may delete it once it can no longer matter: when every
// document of its session has expired in store time, the owner has
// retired the session (its local deadline comes before the expiry its
// last confirmed renewal stored) and reads the record no more. Before
// that it must stay. Revoking writes nothing else: no document that the
// session's owner writes (its session documents, claims, markers). On a
// store whose updates are a read and a later whole-document write
// (FerretDB), a write to a session document by anyone but its owner
// could land after a renewal the owner already counted and put back the
// older expiry: waiters would then see the lease expired while its owner
// still believes it holds. So the owner learns of its revocation by
// reading the record (Revoked) and stops renewing itself; a waiter goes
// on only once the session's lease has expired in store time, exactly as
// after a crash.
type Revocation struct {
	Session string    // the session revoked
	By      string    // who revoked it (user@host)
	Reason  string    // why, as the operator said it
	At      time.Time // store time when it was sent (ServerTime().Latest)
}

// RevokeStore is what a store that can record revocations provides
// (Roles.Revocations).
type RevokeStore interface {
	// Revoke records r with one insert, and writes nothing else: it
	// never changes a session's documents, so renewals of r.Session go
	// on as before and raise its expiry as before. It returns ErrExists
	// if r.Session has a revocation already: the first one recorded
	// stays. Of many revokes of one session, at most one succeeds.
	Revoke(ctx context.Context, r Revocation) error
	// Revoked reads the revocation of session, if one is recorded: one
	// read by its identity, which the session's owner makes at a bounded
	// period while it keeps the session.
	Revoked(ctx context.Context, session string) (Revocation, bool, error)
	// Revocations lists every revocation recorded, in no given order.
	Revocations(ctx context.Context) ([]Revocation, error)
}
