package driver

import (
	"context"
	"time"
)

// UpSpan is a span of store time whose ends are stamps: store times at
// which the store applied a renewal. The stamps a writer merged into one
// span are no more than that writer's break apart (the engine's
// outage rule says which); a single stamp is a span with From == To.
type UpSpan struct {
	From, To time.Time
}

// Uptime is the store's record of when it was up, as ReadUptime read it.
type Uptime struct {
	// Spans are the up-time records and stamps of the session documents
	// that RenewSessionUp wrote, in no order.
	Spans []UpSpan
	// Unmarked: a session document whose expiry was at or after the
	// read's since was written by neither RenewSessionUp nor
	// InsertSessionUp: a document of a dsync that keeps no record (which
	// judges sessions by their expiry alone).
	Unmarked bool
}

// UptimeStore is the role of a store that records, with each renewal, when
// it was up (Roles.Uptime). A session's writer renews through it, sending
// the stamps its earlier renewals got back, merged; the outage rule takes
// the union of every session's, so that a gap in all of them shows a time
// in which no renewal was applied: an outage of the store, or of every
// writer.
// Without it, dsync judges a session by its expiry alone.
//
// The renewal's caller is held to what RenewSession's is (one renewal of
// a document in flight at a time; after a renewal whose outcome is
// unknown, that document is never renewed again) and to one more rule: up
// holds every stamp the document's earlier renewals returned, and every
// span its earlier renewals sent. So the stamps a document holds only
// grow, whichever of its renewals lands last, also on a store that
// applies an update as a read and a later write of the whole document: a
// renewal that lands late is the document's last, and carries all the
// earlier ones did.
type UptimeStore interface {
	// RenewSessionUp does what Store.RenewSession does, and in the same
	// write replaces the document's up-time record with up, stamps the
	// document with the store's time at which the write applied, and
	// marks it as written by this role. It returns the stamp (zero if
	// not found), as the store keeps it: a store may keep it to the
	// millisecond. Stamps follow the store's clock: the stamp of a
	// renewal applied after another's is not earlier, unless that clock
	// was stepped back.
	RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []UpSpan) (applied time.Time, found bool, err error)
	// InsertSessionUp does what Store.InsertSession does, and in the same
	// write marks the document as written by this role, with an empty
	// record and no stamp: the document of a writer that keeps the record,
	// which ReadUptime does not count as unmarked even if no renewal of it
	// ever lands (an insert whose writer gave it up, landing late).
	InsertSessionUp(ctx context.Context, sess Session) error
	// ReadUptime returns, of every session document RenewSessionUp wrote,
	// the spans of its up-time record and its stamp that end at or after
	// since (it may return some that end earlier too), and whether a
	// session document whose expiry is at or after since was written by
	// neither RenewSessionUp nor InsertSessionUp. It reads only writes
	// that the store will not roll back (on a replica set, at majority
	// read concern), and every write the store had applied before a
	// renewal (or InsertSessionUp) that this store saw acknowledged
	// before the read was sent: a caller that needs the evidence others
	// wrote before some moment renews, and then reads. It writes nothing.
	ReadUptime(ctx context.Context, since time.Time) (Uptime, error)
}
