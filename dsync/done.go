package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The calls a Once makes for its done record (once.go says what it does
// with them; dsync/internal/queue/done.go why a record that lands late or
// twice is harmless). Each is one engine call with the Client's preparation and
// error wording; none decides anything.

// doneRecords makes those calls on a Client.
type doneRecords struct{ c *Client }

// doneRecord is what a Once learns of a key's done record: the token of
// the hold whose run it records.
type doneRecord struct{ Token uint64 }

// read reads key's done record, for a Once about to claim: the store
// is prepared for writes, as the claim needs it.
func (r doneRecords) read(ctx context.Context, key string) (rec doneRecord, found bool, err error) {
	if err := r.c.prepare(ctx); err != nil {
		return doneRecord{}, false, err
	}
	return r.get(ctx, key)
}

// look reads key's done record and only reads (Once.Done, which dsync
// status calls for every idle Once): the store is prepared for reading
// (prepare_read.go), so that nothing is created or written.
func (r doneRecords) look(ctx context.Context, key string) (rec doneRecord, found bool, err error) {
	if err := r.c.prepareStoreRead(ctx); err != nil {
		return doneRecord{}, false, err
	}
	return r.get(ctx, key)
}

// get is the read of read and look.
func (r doneRecords) get(ctx context.Context, key string) (rec doneRecord, found bool, err error) {
	d, found, err := r.c.eng.ReadDone(ctx, key)
	if err != nil {
		return doneRecord{}, false, wrap(ctx, "read the done record of", key, err)
	}
	return doneRecord{Token: d.Token}, found, nil
}

// under reads the done record of cl's key while cl holds: the read a
// Once's run must follow.
func (r doneRecords) under(ctx context.Context, cl queue.Ref) (rec doneRecord, found bool, err error) {
	if err := r.c.prepare(ctx); err != nil {
		return doneRecord{}, false, err
	}
	d, found, err := r.c.eng.DoneUnder(ctx, queue.Resume(cl))
	if err != nil {
		return doneRecord{}, false, wrap(ctx, "read the done record of", cl.Key, err)
	}
	return doneRecord{Token: d.Token}, found, nil
}

// mark inserts the done record of cl's key, naming cl's token, with
// nonce, to be forgotten after keep (0: never); mine reports whether the
// record in the store is this one.
func (r doneRecords) mark(ctx context.Context, cl queue.Ref, nonce string, keep time.Duration) (rec doneRecord, mine bool, err error) {
	if err := r.c.prepare(ctx); err != nil {
		return doneRecord{}, false, err
	}
	d, mine, err := r.c.eng.MarkDone(ctx, queue.Resume(cl), nonce, keep)
	if err != nil {
		return doneRecord{}, false, wrap(ctx, "insert the done record of", cl.Key, err)
	}
	return doneRecord{Token: d.Token}, mine, nil
}
