package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The events collection: publishing an event, creating the capped
// collection, and telling a store that cannot have one.

// Publish implements driver.Feed: one insert into the events collection.
func (f *feed) Publish(ctx context.Context, e driver.Event) error {
	est, err := f.prepare(ctx)
	if err != nil {
		return err
	}
	d := eventDoc{ID: bson.NewObjectID(), Proc: e.Proc, Key: e.Key, Epoch: int64(e.Epoch), At: est.Now().Earliest}
	switch e.Kind {
	case driver.Waiting:
		d.Kind, d.Until, d.Own = eventWait, e.Until, int64(e.Own)
	case driver.Ended:
		d.Kind = eventEnded
	default:
		return fmt.Errorf("dsyncmongo: unknown event kind %d", e.Kind)
	}
	f.publishedBy.Store(&e.Proc)
	if err := f.insertEvent(ctx, d); err != nil {
		return err
	}
	if !f.platform.isFerret() {
		return nil
	}
	// On FerretDB, a cursor returns events in the order of their record
	// ids, which the server gives each insert before it commits: a cursor
	// that returned an event whose insert overtook ours never returns ours.
	// An event after ours that was sent before ours landed may have done
	// that: ours is sent again, to come after it (lateTries times at most).
	// Ends and announcements alike: a waiter that misses the end it waits
	// for sleeps until its safety poll, and so does one whose announcement
	// the owner missed, if it is the last in line (no later announcement
	// tells the owner that someone waits) and the claim ends after the
	// waiter's looks of its first second (wake.go), as a leader.Partition
	// shard handed over at its owner's next tick does. A process's own
	// events go one at a time (insertEvent), but another process's may
	// still overtake ours (TestAnnouncementSentAgainWhenOvertaken). The
	// cost is one read of the events per announcement, made once per
	// claim waited for.
	for try := range lateTries {
		landed := est.Now().Latest
		if err := f.cfg.fault("event landed"); err != nil {
			return nil
		}
		late, leftovers, err := f.landedLate(ctx, d.ID, landed)
		if try == 0 && len(leftovers) > 0 {
			// Read anyway: events their senders did not delete (trim.go).
			f.deleteEvents(ctx, leftovers)
		}
		if err != nil || !late {
			return nil // best effort: the event itself was sent
		}
		d.ID, d.At = bson.NewObjectID(), est.Now().Earliest
		if err := f.insertEvent(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// lateTries bounds how many times Publish sends an event again because
// it may have been passed over (see landedLate).
const lateTries = 2

// landedLate reports whether the event id, whose insert returned before
// the store time landed, may have been passed over by a cursor: it is no
// longer in the events collection, or an event after it in the
// collection's order was sent before landed (its insert may have
// committed before ours, and a cursor may have returned it before ours
// was there). An event sent after landed was inserted after ours
// committed, and comes after it in every cursor.
//
// This holds because an event is deleted only while a later one is kept
// (trim.go): if any cursor returned an event after ours, an event after
// ours is in the collection now.
//
// It also returns, as old, the events sent leftoverAge or more before
// landed but the last (their senders did not delete them: trim.go).
func (f *feed) landedLate(ctx context.Context, id bson.ObjectID, landed time.Time) (late bool, old []bson.ObjectID, err error) {
	cur, err := f.events.Find(ctx, bson.D{}, options.Find().
		SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: 1}}).
		SetBatchSize(eventsMaxDocs))
	if err != nil {
		return false, nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	found := false
	var left leftovers
	for cur.Next(ctx) {
		var e struct {
			ID bson.ObjectID `bson:"_id"`
			At time.Time     `bson:"at"`
		}
		if err := cur.Decode(&e); err != nil {
			continue
		}
		switch {
		case e.ID == id:
			found = true
			left.note(e.ID, e.At, landed, true)
		case found && !e.At.After(landed):
			late = true
			left.note(e.ID, e.At, landed, true)
		default:
			left.note(e.ID, e.At, landed, false)
		}
	}
	if err := cur.Err(); err != nil {
		return false, nil, err
	}
	return late || !found, left.take(), nil
}

// insertEvent writes an event, with the write timeout. On FerretDB, a
// store's inserts go one at a time: a cursor returns events in the order
// of the record ids the server gives inserts before they commit, so of
// two inserts sent together the later may commit first, and a cursor
// that returned it never returns the other (see Publish). A process that
// releases or queues for many keys at once sent its events together, and
// the cursors passed over some of them, and over the copies sent again
// (TestWaitersOfManyKeysWokenByTheirEnds); one at a time, a process's
// events commit in the order of their record ids.
func (f *feed) insertEvent(ctx context.Context, e eventDoc) error {
	if f.platform.isFerret() {
		f.insertMu.Lock()
		defer f.insertMu.Unlock()
	}
	return f.writer.write(ctx, "event", func(ctx context.Context) error {
		_, err := f.events.InsertOne(ctx, e)
		return err
	})
}

// createEvents creates the capped events collection unless it exists. A
// collection of that name that is not capped, or a server without capped
// collections, is a *noEventsError.
//
// It looks before it creates: a stream that goes down reopens through
// here, and on FerretDB's SQLite backend many clients creating one
// collection at once have left another collection's table missing from
// its registry ("no such table"), failing every write to it.
func (f *feed) createEvents(ctx context.Context) error {
	name := f.cfg.collection + eventsSuffix
	exists, err := f.checkEvents(ctx, name)
	if err != nil || exists {
		return err
	}
	err = f.cfg.fault("create events")
	if err == nil {
		err = f.db.CreateCollection(ctx, name, options.CreateCollection().
			SetCapped(true).SetSizeInBytes(eventsCap).SetMaxDocuments(eventsMaxDocs))
	}
	var ce mongo.CommandError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && (ce.Code == 48 || ce.Name == "NamespaceExists"):
		// Created meanwhile by another process.
		_, err = f.checkEvents(ctx, name)
		return err
	case unsupported(err):
		return &noEventsError{"the server does not support capped collections", err}
	}
	return err
}

// checkEvents reports whether the events collection exists, and fails
// with a *noEventsError if it exists but is not capped. A listing that
// fails or says nothing of the options counts as not knowing: the
// collection is taken to exist only if listed (a tailable cursor on it
// fails later if it is not capped).
func (f *feed) checkEvents(ctx context.Context, name string) (bool, error) {
	specs, err := f.db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil || len(specs) != 1 {
		return false, nil
	}
	if specs[0].Options == nil {
		return true, nil
	}
	if capped, _ := specs[0].Options.Lookup("capped").BooleanOK(); !capped {
		return true, &noEventsError{"the events collection exists but is not capped (drop it, and a store recreates it capped)", errors.New("not capped")}
	}
	return true, nil
}

// noEventsError: wake-ups cannot work on this deployment.
type noEventsError struct {
	reason string
	err    error
}

func (e *noEventsError) Error() string { return e.reason + ": " + e.err.Error() }

func (e *noEventsError) Unwrap() error { return e.err }

// unsupported reports whether the server refuses a capped collection or a
// tailable cursor as a feature it lacks, rather than for a passing cause:
// CommandNotSupported (115), NotImplemented (238), APIStrictError (323,
// the Stable API in strict mode), or a message that says so (Atlas
// serverless, Amazon DocumentDB, Azure Cosmos DB; a tailable cursor on a
// collection that is not capped).
func unsupported(err error) bool {
	var se mongo.ServerError
	if !errors.As(err, &se) {
		return false
	}
	if se.HasErrorCode(115) || se.HasErrorCode(238) || se.HasErrorCode(323) {
		return true
	}
	msg := strings.ToLower(se.Error())
	for _, m := range []string{"not supported", "unsupported", "not allowed", "not_allowed", "non capped", "not capped", "non-capped"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
