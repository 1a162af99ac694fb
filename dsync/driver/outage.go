package driver

import (
	"context"
	"time"
)

// Outage is the record that a session rode an outage of the store through
// (an outage grace: dsync.ClientWithOutageGrace): its lease was suspended
// at its local deadline, and resumed when the store was back and its
// record of up-time showed the outage was everyone's. Holds is how many
// holds' claims the resume kept: their owners hold again with the same
// tokens when they take them back. It says whose (Session, Host, PID),
// when (Suspended, Resumed) and how many holds (Holds). dsync status,
// the status page and statuspage.Reader.Outages list it.
//
// An outage record is a document of its own, inserted once and never
// changed, by the resumed session's process only. It is safe whenever
// and however often it lands:
//
//   - late: "session S, suspended at T, resumed with N holds kept" stays
//     true once it happened, whenever the record arrives;
//   - twice: the second insert is ErrExists, which the sender takes as
//     success; the first record stays;
//   - after the sender's later writes: it is keyed by the session and
//     Suspended, so it describes that one suspension only, never a later
//     one of the same session.
//
// No rule of the protocol reads it (it has no epoch: walks, prunes, floors
// and the outage rule's ReadUptime never see it); it only reports. A store
// may delete it once it is older than a retention of its own.
type Outage struct {
	Session string // the resumed session
	Host    string // its process
	PID     int
	// Suspended is when the session's lease was suspended (its local
	// deadline: its holds' Lost closed then; the store's outage began up
	// to a TTL earlier), and Resumed when it was resumed: store times
	// derived from At less the holder's own elapsed time, so they are off
	// by the uncertainty of At.
	Suspended, Resumed time.Time
	Holds              int       // the holds whose claims the resume kept
	At                 time.Time // store time when it was sent (ServerTime().Latest)
}

// OutageStore is what a store that can record outages ridden through
// provides (Roles.Outages).
type OutageStore interface {
	// RecordOutage records o with one insert, and writes nothing else. It
	// returns ErrExists if the store has a record of o.Session and
	// o.Suspended already: the first one recorded stays.
	RecordOutage(ctx context.Context, o Outage) error
	// ListOutages lists every outage record not yet deleted whose At is
	// at or after since (it may return older ones too), in no given
	// order. It writes nothing.
	ListOutages(ctx context.Context, since time.Time) ([]Outage, error)
}
