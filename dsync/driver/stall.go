package driver

import (
	"context"
	"time"
)

// Stall is the record that a hold stalled. Its work reported no progress
// within the hold's progress deadline, so the holder gave the hold up and
// released its claim. It says which claim (Key, Token, Session, Nonce),
// whose (Owner, Host, PID), and when (Since, LastProgress, At). dsync
// status, the status page and statuspage.Reader.Stalls list it.
//
// A stall record is a document of its own, inserted once and never
// changed, by the holder only. It is safe
// whenever and however often it lands:
//
//   - late: "the claim Nonce of Key, of Token, stalled" stays true once
//     it happened, whenever the record arrives;
//   - twice: the second insert is ErrExists, which the sender takes as
//     success; the first record stays;
//   - after the sender's later writes: it is keyed by the session and the
//     claim's nonce, so it describes its own claim only, never one the
//     process made since.
//
// No rule of the protocol reads it (it has no epoch: walks, prunes and
// floors never see it); it only reports. A store may delete it once it
// is older than a retention of its own.
type Stall struct {
	Key     string // the key as stored: a namespaced key begins with "dsync:"
	Token   uint64 // the claim's epoch: its fencing token
	Owner   string // the primitive that claimed
	Session string // the claiming process's session
	Nonce   string // the claim's
	Host    string // the claiming process
	PID     int
	// Since is when the hold began and LastProgress when its work last
	// reported progress (or Since, if it never did): store times derived
	// from At less the holder's own elapsed time, so they are off by the
	// uncertainty of At.
	Since        time.Time
	LastProgress time.Time
	At           time.Time // store time when it was sent (ServerTime().Latest)
}

// StallStore is what a store that can record stalled holds provides
// (Roles.Stalls).
type StallStore interface {
	// RecordStall records s with one insert, and writes nothing else. It
	// returns ErrExists if the store has a record of s.Session and
	// s.Nonce already: the first one recorded stays.
	RecordStall(ctx context.Context, s Stall) error
	// Stalls lists every stall recorded and not yet deleted, in no given
	// order. It writes nothing.
	Stalls(ctx context.Context) ([]Stall, error)
}
