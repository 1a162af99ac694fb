package dsyncmongo

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// One cursor's pass over the events (follow): when the stream turns
// live, whether it resumes where the last cursor stopped, and what each
// event is passed on as.

// A streamPass is one cursor's pass over the events: what follow knows
// as it reads them.
//
// A quick follow is live at its first batch. Whether it tells the
// handler so (which has every waiter of the process look again, one read
// each) waits until it knows whether the cursor goes on where the last
// one stopped (resuming): it does if the events kept still hold the last
// event the stream returned, which comes before any event the stream
// never returned. If that event is gone (deleted: a trim fails the
// cursors that sit on what it deletes), events after it may have gone
// unseen too. The history before our "open" event holds the events their
// senders left (trim.go): those sent leftoverAge or more before ours, but
// the newest of them, are deleted once the stream is live.
type streamPass struct {
	t        *tailer
	cur      *mongo.Cursor
	quick    bool
	open     eventDoc // the "open" event (zero for a quick follow)
	now      func() time.Time
	live     bool
	resuming bool
	left     leftovers
}

// resumed ends the resuming, telling the handler the stream is live
// again if events may have gone unseen.
func (p *streamPass) resumed(tell bool) {
	p.resuming = false
	if tell {
		p.t.h.Live(p.t.gen.Add(1))
	}
}

// caughtUp: the cursor caught up with the events without meeting the last
// one the stream returned before.
func (p *streamPass) caughtUp() {
	if p.resuming {
		p.resumed(true)
	}
}

// see takes in event e.
func (p *streamPass) see(e eventDoc) {
	t := p.t
	ours := e.Proc == t.openProc || t.f.publishedByUs(e.Proc)
	if t.trim != nil {
		t.trim.note(e.ID, ours)
		if !p.quick && !p.live && e.ID != p.open.ID {
			p.left.note(e.ID, e.At, p.open.At, ours)
		}
	}
	p.track(e)
	if !t.passed.add(e.ID) {
		return // passed before this cursor was opened
	}
	switch {
	case !p.quick && e.ID == p.open.ID:
		if !p.live {
			p.live = t.turnLive(p.cur, true)
			if t.trim != nil {
				t.trim.dropLeftovers(p.left.take())
			}
		}
	case ours:
		t.ownSeen.Add(1)
		if e.Kind == eventEnded && e.Key != "" && e.Epoch > 0 {
			// The end of our own claim ends the waits other processes
			// announced for it: without this, the process that
			// released kept its getMores short on FerretDB until
			// their announcements lapsed, an hour on.
			t.othersWait.ended(e.Key, e.Epoch)
		}
	default:
		t.pass(e, p.now())
	}
}

// track turns a quick follow live at its first event, follows whether it
// resumes where the last cursor stopped, and remembers the last event
// returned.
func (p *streamPass) track(e eventDoc) {
	t := p.t
	if p.quick && !p.live {
		p.live = t.turnLive(p.cur, false)
		p.resuming = true
	}
	if p.resuming {
		switch {
		case e.ID == t.last:
			p.resumed(false)
		case !t.passed.has(e.ID):
			p.resumed(true)
		}
	}
	if !p.resuming {
		t.last = e.ID
	}
}
