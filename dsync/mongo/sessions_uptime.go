package dsyncmongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The record of up-time (driver.UptimeStore), kept in the session
// documents: a renewal through RenewSessionUp sets "up" to its writer's
// record and "v" to upVersion, beside what every renewal writes
// ($max expiresAt, $currentDate seen). A document's evidence is its "up"
// and its "seen".
//
// Safe however it lands, on FerretDB too, which applies the update as a
// read of the document and a later write of the whole of it: each
// document has one writer, its session's owner, which sends one renewal
// of it at a time and, after one whose outcome is unknown, never renews
// that document again (it moves to the next generation). So no two
// updates of a document are ever in flight together, no write can put
// back an older "up" over a newer one, and the one write that may land
// late is the document's last, whose "up" holds every stamp the earlier
// ones returned (driver.UptimeStore's rule for its caller). Its "seen" is
// the time it landed: a true stamp, later than any it replaces; it adds
// evidence, and fills no gap of the past.

// upVersion marks a session document written by RenewSessionUp or
// inserted by InsertSessionUp: its "seen" and "up" are a record of
// up-time (none yet after the insert). A document without it was written
// by a dsync that keeps none.
const upVersion = 2

// InsertSessionUp implements driver.UptimeStore: InsertSession's one
// insert, with "v" set to upVersion (and no "up" or "seen" yet).
func (s *Store) InsertSessionUp(ctx context.Context, sess driver.Session) error {
	return s.sessions.insert(ctx, sess, upVersion)
}

// RenewSessionUp implements driver.UptimeStore: RenewSession's one
// findAndModify by _id, that also sets "up" and "v", and returns "seen"
// as the server set it. The spans are kept to the millisecond, as BSON
// dates are (stamps the store returned already are).
func (s *Store) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool, error) {
	spans := make(bson.A, 0, len(up)) // an empty record, not null
	for _, sp := range up {
		spans = append(spans, upSpanDoc{From: sp.From, To: sp.To})
	}
	return s.sessions.renew(ctx, id, gen, expires, bson.D{{Key: "up", Value: spans}, {Key: "v", Value: upVersion}})
}

// ReadUptime implements driver.UptimeStore: one find of every session
// document (shared with the calls that ask at the same time:
// sessions_shared.go), at majority read concern (a renewal a failover rolls back is
// not evidence; FerretDB has one server, whose writes are all
// committed). Why the contract promises the writes before a renewal this
// store saw acknowledged, not all those acknowledged to anyone: before
// MongoDB 8.0, a newly elected primary may serve majority reads from a
// commit point older than writes its predecessor acknowledged, until it
// commits a write of its own term (SERVER-53813); a renewal acknowledged
// at majority by it is such a write. Should another election come
// between that renewal and the read, a server before 8.0 may still serve
// the read from the older point.
//
// It reads every session document, not those renewed since since: a
// document's "seen" is its newest stamp only while the server's clock
// never goes back, and the evidence must not rest on that. The spans
// that end before since are left out. The sessions collection holds a
// document per session generation that expired within sessionRetention:
// one per process started, and one more for each outage a process's
// session rode through (its renewals of unknown outcome move it to a new
// generation), each with the spans of its own renewals. On FerretDB the
// read decodes every document of the collection, so that its cost grows
// with the outages of the last hour as well as with the processes
// (docs/contributing.md: the outage soak).
func (s *Store) ReadUptime(ctx context.Context, since time.Time) (driver.Uptime, error) {
	docs, err := s.sessions.uptimeDocs(ctx)
	if err != nil {
		return driver.Uptime{}, err
	}
	return uptimeOf(docs, since), nil
}

// uptimeOf is the record of up-time of docs since since (ReadUptime).
func uptimeOf(docs []sessionDoc, since time.Time) driver.Uptime {
	var out driver.Uptime
	add := func(from, to time.Time) {
		if !to.Before(since) {
			out.Spans = append(out.Spans, driver.UpSpan{From: from, To: to})
		}
	}
	for _, d := range docs {
		if d.V != upVersion {
			out.Unmarked = out.Unmarked || !d.ExpiresAt.Before(since)
			continue
		}
		for _, sp := range d.Up {
			add(sp.From, sp.To)
		}
		if !d.Seen.IsZero() {
			add(d.Seen, d.Seen)
		}
	}
	return out
}
