package queue

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Done records: what a dsync.Once keeps once its function succeeded.
//
// A Once is an exclusive claim of its key plus one more document, the
// key's done record (KindDone, ID DoneID(key)), inserted by the holder
// whose run of the function returned nil, with the hold's token: it says
// "the run holding token T succeeded". It is inserted once and never
// updated; it has no epoch, so walks, floors and prunes never see it.
//
// A run starts only after a read under the hold found no record (DoneUnder):
// a record confirmed before that read was sent is seen by it, so once a
// record is confirmed no run starts again (until the store loses it). The
// read before claiming (ReadDone) only spares the claim when the record
// is there; it proves nothing for the hold that follows.
//
// Compaction (sweep.go) keeps a done record, however idle its key, unless
// the record has an expiry (Exp, set when the Once was told to forget its
// key after a while) that lies before the sweep's bound: a Do of the key
// after that runs the function again, which is what forgetting means.
// That Do inserts the record again under the same ID, so a compaction's
// delete of the old record that lands late must not take the new one:
// stores judge done records by the sweep's bound when the delete reaches
// them, not by the ID read before (driver.Maintainer.Compact; the simulation
// plants the other way, simBugCompactDoneByID).
//
// Late writes of the record: it states a fact that stays true whenever
// it lands (a record landing after a sweep deleted it only comes back, to
// be deleted by a later sweep if it has an expiry).
//
//   - Landing after its sender's hold ended: the sender retries it while
//     the hold is valid, and releases the hold only once it is confirmed;
//     a hold whose record stayed unconfirmed ends with its session, so the
//     next holder gets in only after that session expired. If the record
//     lands before the next holder's read under its hold, the function is
//     not run again; if after, it is run again, and that run's insert
//     answers ErrExists with another nonce: the function succeeded twice,
//     and the record names the run whose insert landed first.
//   - Landing twice: one ID, so an insert applies once at most; a retry
//     carries the same nonce, so its ErrExists is recognised as its own.
//   - Landing after its sender's later writes: those are the release of
//     the hold, sent only once the record was confirmed, and later claims
//     of the key, whose holders read the record again under their hold.

// DoneID is the ID of key's done record.
var DoneID = driver.DoneID

// KindDone is the kind of a done record.
const KindDone = driver.KindDone

// doneRecords reads and inserts the done records of a Once's keys (see
// above): documents of their own beside the key's queue, which holds
// nothing of them.
type doneRecords struct {
	*plant
	store Store
	clock Times
	host  string // Config.Host and PID, for people (dsync status)
	pid   int
}

// ReadDone reads key's done record. found is false when there is none.
func (o *doneRecords) ReadDone(ctx context.Context, key string) (rec Doc, found bool, err error) {
	rec, found, err = o.store.Get(ctx, DoneID(key))
	if err != nil || !found || rec.Kind != KindDone {
		return Doc{}, false, err
	}
	return rec, true, nil
}

// MarkDone inserts the done record of c's key, naming c's epoch, with
// nonce (the same on every attempt for one run). keep > 0 lets compaction
// delete the record once keep has passed (its Exp: the store's latest
// possible time when sent, plus keep); with 0 it is kept until the
// collections are emptied. It returns the record in
// the store: mine reports whether it is this run's (inserted now, or by
// an earlier attempt of the same nonce). An error means the outcome is
// unknown: send it again, with the same nonce, while c holds.
func (o *doneRecords) MarkDone(ctx context.Context, c *Claim, nonce string, keep time.Duration) (rec Doc, mine bool, err error) {
	d := Doc{ID: DoneID(c.Key), Key: c.Key, Kind: KindDone, Nonce: nonce, Session: c.Session, Owner: c.Owner,
		Host: o.host, PID: o.pid, Sent: o.clock.ServerNow().Latest, Token: c.Epoch}
	if keep > 0 {
		d.Exp = d.Sent.Add(keep)
	}
	err = o.store.Insert(ctx, d)
	if err == nil {
		return d, true, nil
	}
	if !errors.Is(err, ErrExists) {
		return Doc{}, false, err
	}
	rec, found, err := o.ReadDone(ctx, c.Key)
	if err != nil {
		return Doc{}, false, err
	}
	if !found {
		// The ID exists but holds no done record: a store emptied between
		// the two requests. Unknown: try again.
		return Doc{}, false, errors.New("the done record vanished after its insert answered ErrExists")
	}
	return rec, rec.Nonce == nonce, nil
}
