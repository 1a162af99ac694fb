package statuspage

import (
	"context"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The outages of the store that holders rode through (an outage grace:
// dsync.ClientWithOutageGrace): each resumed session that kept holds
// records when it was suspended and resumed, and how many holds it kept
// (driver.Outage). One outage of the whole store shows as a record per
// process that held something then. All of it is a report: nothing here
// grants or ends a claim.

// OutagesShown is how far back the page and dsync status show the
// outages ridden through: a day, as long as dsyncmongo keeps their
// records.
const OutagesShown = 24 * time.Hour

// An Outage is the record of an outage of the store that a session rode
// through (Reader.Outages): its lease was suspended at its local deadline
// (its holds' Lost closed then; the outage began up to a TTL earlier) and
// resumed when the store was back, with Holds holds kept, which their
// owners take back with the same tokens.
type Outage struct {
	// Session is the resumed session, Host and PID its process.
	Session string `json:"session"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// Suspended and Resumed are store times, counted back from At by the
	// holder's clock; At is when the holder sent the record.
	Suspended time.Time `json:"suspended"`
	Resumed   time.Time `json:"resumed"`
	Holds     int       `json:"holds"`
	At        time.Time `json:"at"`
}

// Outages returns the records of outages ridden through that the store
// keeps, sent at or after since (store time), newest first. It returns
// none on a store that records none (driver.Roles.Outages). A store may
// delete a record once it is old (dsyncmongo keeps one for a day).
func (r *Reader) Outages(ctx context.Context, since time.Time) ([]Outage, error) {
	roles, _ := reads().Roles(r.client).(driver.Roles)
	if roles.Outages == nil {
		return nil, nil
	}
	stored, err := roles.Outages.ListOutages(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make([]Outage, 0, len(stored))
	for _, o := range stored {
		if o.At.Before(since) {
			continue // a store may return older ones
		}
		out = append(out, Outage{Session: o.Session, Host: o.Host, PID: o.PID, Suspended: o.Suspended, Resumed: o.Resumed, Holds: o.Holds, At: o.At})
	}
	slices.SortFunc(out, func(a, b Outage) int { return b.At.Compare(a.At) }) // newest first
	return out, nil
}
