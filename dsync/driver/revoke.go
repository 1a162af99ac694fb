package driver

import (
	"context"
	"time"
)

// Revocation is an operator's record that a session (a process's lease)
// must no longer be renewed: who asked, when and why (dsync revoke
// writes it; dsync status and Client.Revocations list it).
//
// A revocation is insert-only: no write changes or deletes it, so no
// renewal, however late it lands, can erase it (FerretDB applies an
// update as a read and a later write, which would erase a mark kept as
// a field of the session's documents). Safety never rests on it: a
// waiter goes on only once the session's lease has expired in store
// time, as after a crash.
type Revocation struct {
	Session string    // the session revoked
	By      string    // who revoked it (user@host)
	Reason  string    // why, as the operator said it
	At      time.Time // store time when it was sent (ServerTime().Latest)
}

// RevokeStore is what a store that can record revocations provides,
// besides Store.
type RevokeStore interface {
	// Revoke records r with one insert, or returns ErrExists if
	// r.Session has a revocation already: the first one recorded stays.
	// Of many revokes of one session, at most one succeeds. Once Revoke
	// (or, on ErrExists, an earlier one) has returned, RenewSession of
	// the session's generations then existing reports them not found
	// and raises no expiry. A store may mark them with a write apart
	// from the record's insert: a renewal in flight may then land after
	// the mark and erase it (a store whose updates are a read and a
	// later write), and a generation inserted later carries no mark. A
	// caller that must be sure calls Revoke again (it marks again, and
	// returns ErrExists) until the session has expired.
	Revoke(ctx context.Context, r Revocation) error
	// Revocations lists every revocation recorded, in no given order.
	Revocations(ctx context.Context) ([]Revocation, error)
}
