package queue

import (
	"context"
	"slices"
	"time"
)

// A session's record of up-time (driver.UptimeStore): with an outage
// grace, on a store that keeps the record, each renewal of a session
// document sends the stamps that document's earlier renewals got back,
// merged under its break (TTL/2), and keeps the stamp the store returns.
// A renewal of unknown outcome keeps none, and its document is never
// renewed again (RenewSession); so each document's last write, whenever
// it lands, holds every stamp that document's earlier renewals returned,
// as the role asks of its caller.
//
// The next generation's document starts a record of its own, with only
// the last span of the record so far (carried): the document before it
// keeps the stamps it has, and the documents of a session hold, together,
// every stamp its renewals got back (the newest only once the next
// renewal of its document lands), merged as one record would hold them
// (unless the store's clock stepped back, and a stamp merged into an
// earlier span). The last span is the one the newest stamp merged into, which the
// document before holds apart (its last write sent the spans before that
// stamp and got the stamp back), and which the next stamps merge into.
// A document is deleted only an hour after it expired (dsync/mongo's
// sessionRetention): its stamps, applied before the expiries they
// stored unless a write landed more than a TTL late, stay about as long
// as they would in a record carried whole (upRetention). A generation
// that carried its predecessors' whole record made a session's documents
// hold spans as the square of the outages it rode through, and FerretDB
// decodes every span of the collection at each read of the record.

// upRetention is how long before a session's newest stamp its record
// keeps a span: as long as dsync/mongo keeps an expired session's
// documents, far longer than MaxGrace, the longest an outage is credited.
const upRetention = time.Hour

// newSessions returns the sessions of an engine of cfg over store.
func newSessions(p *plant, store Store, clock Times, cfg Config) *sessions {
	s := &sessions{plant: p, store: store, clock: clock, newID: cfg.NewID, renewals: make(map[string]*renewal)}
	if u := store.Roles().Uptime; u != nil && cfg.OutageGrace > 0 {
		s.uptime, s.grace = u, cfg.OutageGrace
	}
	return s
}

// renewDoc renews r's current generation of session id (see
// RenewSession), with the record of up-time if the engine keeps it; r.mu
// is held.
func (s *sessions) renewDoc(ctx context.Context, r *renewal, id string, expires time.Time) (bool, error) {
	if s.uptime == nil {
		return s.store.RenewSession(ctx, id, r.gen, expires)
	}
	s.mu.Lock()
	up := slices.Clone(r.up)
	s.mu.Unlock()
	stamp, found, err := s.uptime.RenewSessionUp(ctx, id, r.gen, expires, up)
	if err == nil && found {
		s.mu.Lock()
		r.up = addStamp(r.up, stamp, r.ttl/2)
		r.stored = append(slices.Clip(up), UpSpan{From: stamp, To: stamp})
		s.mu.Unlock()
	}
	return found, err
}

// insertDoc inserts a document of a session (its open, or a generation
// after a renewal of unknown outcome), marked through the record of
// up-time if the engine keeps it (driver.UptimeStore.InsertSessionUp): a
// resume check waits while any session document unexpired since the
// outage is unmarked (a document of a dsync that judges by expiry alone,
// Suspension.Check), and an insert this engine gave up may land late,
// after the outage, and never be renewed. Marked in the insert itself, it
// holds up no check; it carries no stamp until its first renewal.
func (s *sessions) insertDoc(ctx context.Context, sess Session) error {
	if s.uptime == nil {
		return s.store.InsertSession(ctx, sess)
	}
	return s.uptime.InsertSessionUp(ctx, sess)
}

// carried is what a session's next generation carries of its record up:
// its last span, which holds the newest stamp.
func carried(up []UpSpan) []UpSpan {
	if len(up) == 0 {
		return nil
	}
	return []UpSpan{up[len(up)-1]}
}

// addStamp merges stamp into up under the break brk, and drops the spans
// that end more than upRetention before the newest stamp.
func addStamp(up []UpSpan, stamp time.Time, brk time.Duration) []UpSpan {
	brk = max(brk, 0) // a TTL is positive (OpenSession); this keeps Chains' rule
	merged, err := Chains(append(slices.Clip(up), UpSpan{From: stamp, To: stamp}), brk)
	if err != nil {
		// Chains fails only on an inverted span or a negative break,
		// and a record made here has neither.
		panic("queue: " + err.Error())
	}
	newest := merged[len(merged)-1].To
	return slices.DeleteFunc(merged, func(sp UpSpan) bool { return sp.To.Before(newest.Add(-upRetention)) })
}

// OwnUptime returns the record of up-time of session's current
// generation (the span it carried, and the stamps its renewals got back
// from the store), merged under its break:
// nil if the engine keeps none (no grace, or a store without the
// record), or did not open the session, or has forgotten it (unrenewed
// for two TTLs). It is the record the session's next renewal sends: every stamp in it was applied
// by the store, but its newest stamp merged into the spans is not in the
// store yet (a waiter judges on the store's record: judge_outage.go).
func (s *sessions) OwnUptime(session string) []UpSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.renewals[session]; r != nil {
		return slices.Clone(r.up)
	}
	return nil
}

// Grace returns the outage grace this engine's claims carry: zero when it
// has none, or the store keeps no record of up-time.
func (s *sessions) Grace() time.Duration { return s.grace }

// ownStamps returns what every session this engine keeps wrote to the
// store: for each, the record its last confirmed renewal wrote (the spans
// it sent, and the stamp it got back, apart). A suspended owner's check
// adds it to the record it reads (resume.go): more evidence only makes a
// verdict of dead likelier, so a stamp the store no longer holds (an
// emptying of the sessions collection deletes them, and this engine
// remembers them until it renews each session again) cannot make the
// check resume where a waiter found dead. A waiter's verdict rests on the
// store's record alone (judge_outage.go): evidence the owner's check,
// reading the store after its renewal landed, reads too (doc_outage.go,
// O2); judged on these stamps, a waiter found dead the session of an
// owner whose check, on the stored record, resumed
// (TestWaiterEvidenceSurvivesAnEmptying).
//
// It is not OwnUptime: that one merges the newest stamp into the spans
// under the session's break, and the store holds that merge only once
// the next renewal lands (TestWaiterEvidenceIsStored).
func (s *sessions) ownStamps() []UpSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []UpSpan
	for _, r := range s.renewals {
		out = append(out, r.stored...)
	}
	return out
}
