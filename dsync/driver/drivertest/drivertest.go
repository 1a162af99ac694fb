// Package drivertest is the conformance suite of dsync's drivers. It
// belongs in a driver's tests, not in code that uses dsync.
//
// It checks every guarantee package driver states against a real store. A
// driver passes it before dsync may run on it; dsync/driver/memory and
// dsync/mongo both do.
//
// A driver's test calls Run with a function that opens a fresh, empty
// store (the suite calls Prepare itself), and, if the store has a feed
// (driver.Roles.Feed), Peer with a function that opens a second store on
// the same data, as another process would:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T) driver.Store {
//			s := mydriver.Open(...) // fresh and empty
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, drivertest.Peer(func(t *testing.T, first driver.Store) driver.Store {
//			return mydriver.Open(...) // the same data as first
//		}))
//	}
//
// The suite checks, each in a subtest (a role's only where the store's
// Roles serve it):
//
//   - Roles: callable before Prepare, and the same roles after it.
//   - Insert: an insert creates the document, and Get reads back every
//     field the contract carries (a claim's Waiter too); a second insert of its ID answers
//     ErrExists and changes nothing; of many concurrent inserts of one ID,
//     exactly one succeeds.
//   - InsertOrdered: all created (dup -1), or created up to the first
//     existing ID, whose index is returned, and none after it, also when
//     several processes insert a claim and its shadow at once.
//   - Get of a missing ID: not found, no error.
//   - GetRun (Runs): a key's claims and end markers of a range of epochs,
//     in order, each claim before its markers, and nothing else of note
//     (shadows and a read lane's documents may come too), across a change
//     in the epochs' number of digits as well.
//   - Delete: deletes exactly the documents named, skips the missing
//     ones, and leaves every other; deletes of one ID at once all succeed.
//   - Segments: gates (with their floor) and the protocol document keep
//     their fields.
//   - LaneDocs: a read lane's root, slots, their shadows and end markers
//     and its seal keep every field, many of one kind and epoch side by
//     side; a seal and a read hold of one slot share its ID, the first
//     insert standing; a chained read hold's ordered insert stops at the
//     shadow below.
//   - InsertEach: each document created apart from the others; ErrExists
//     for each whose ID exists, which is left as it was.
//   - RecentKeys, Compact, DropGates (Maintenance): the keys with a
//     recent gate; every document sent before a time (a read lane's too) but those of the
//     keys kept and the protocol document; the gates of old buckets, and
//     nothing else.
//   - PutKeys, HasKey (Directory): recording a key again, or from many
//     processes at once, succeeds; the directory has and lists every key
//     recorded, once, and no key that has documents but was never
//     recorded.
//   - ListKeys (Directory): in the order the store declares (KeyOrder: of
//     bytes, or of first use, for keys recorded one after the other),
//     filtered by prefix, after (refused with ErrAfterUnsupported by a
//     store of OrderFirstUse) and limit, against a reference; paging
//     through them all; a negative limit refused.
//   - ListKeysStream (Directory): 600 keys recorded from several
//     processes at once are each listed once; a listing ends when its
//     caller stops, and with an error, before its end, when its context
//     ends after the first key (a store reads at most 500 keys at a
//     time).
//   - Sessions: generations are inserted once; a renewal raises a
//     generation's expiry and never lowers it, and creates nothing; a read
//     returns the generation with the highest expiry.
//   - ServerTime: intervals that can each contain the store's clock as it
//     moves forward; called before Prepare, an answer (of no use), not a
//     panic.
//   - Peers: processes racing to record the hint key all get one key,
//     kept; a peer's record is replaced, and the records not expired are
//     listed, apart from the sessions.
//   - Revoke (Revocations): of many revokes of one session, one succeeds
//     and its record stays; renewals of the session go on as before.
//   - Stall (Stalls): of many records of one claim, one succeeds and
//     stays, every field as sent.
//   - Waits (Waits): of many notes of one set and number, one succeeds
//     and stays, every field as sent, whatever its sender changes after;
//     a set's latest note is its highest number, never another set's; a
//     listing since a time has exactly the notes sent since.
//   - Deadlocks (Deadlocks): of many records of one victim and note, one
//     succeeds and stays, its cycle whole; a listing since a time has
//     exactly the records sent since.
//   - Outage (Outages): of many records of one suspension, one succeeds
//     and stays, every field as sent; a listing since a time has exactly
//     the records sent since; a record is no session, nor up-time.
//   - UptimeStamps, UptimeRead (Uptime): a renewal with a record of
//     up-time renews as RenewSession does and is stamped with the store's
//     time, stamps never going back; a read returns the spans and stamps
//     written since its since and nothing never written; a later
//     renewal carrying the earlier's record removes nothing, even landing
//     with a lower expiry; session documents not renewed with a record
//     are reported, documents of other roles are not.
//   - Done: a done record (KindDone, DoneID) is stored with its Token and
//     every other field, inserted once.
//   - Feed (with a Peer): a follower turns live, receives what another
//     store publishes (also from within Live), and nothing once stopped;
//     it is told from one goroutine at a time. Delivery is a hint:
//     neither order nor exactly-once is required. The suite follows each
//     store once, as a Client does.
//
// What a driver may do, and the suite allows: store times to the
// millisecond, rounding Doc.Sent up (it is the latest possible time of
// sending, and stays so); the suite sends Doc.Exp, Doc.TTL, Doc.Grace and
// Session.ExpiresAt in whole milliseconds, as the protocol does, and
// Event.Until too (a hint's). It may delete sessions long expired (the
// suite's expiries are near the store's now), and apply an update as a
// read and a later write, so concurrent renewals of one session document
// are not checked (the protocol never sends them); a late renewal with a
// lower expiry is.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Option adds to what the suite knows of the driver. A bad one fails the
// test at Run, before any check.
type Option func(*suite) error

// Peer lets the suite open a second store on the same data as first. first
// is a store open returned. The second is opened as another process would.
// The feed's events published through one must reach a follower of the
// other. A driver whose stores share their data in process may return first
// itself. Without Peer, the feed's delivery is not checked.
func Peer(peer func(t *testing.T, first driver.Store) driver.Store) Option {
	return func(s *suite) error {
		if peer == nil {
			return errors.New("drivertest: Peer(nil)")
		}
		s.peer = peer
		return nil
	}
}

type suite struct {
	open func(t *testing.T) driver.Store
	peer func(t *testing.T, first driver.Store) driver.Store
}

// Run runs the suite against the stores open returns. open must return a
// fresh, empty store each time, and close it when t ends (t.Cleanup): the
// suite does not call Close.
func Run(t *testing.T, open func(t *testing.T) driver.Store, opts ...Option) {
	s := &suite{open: open}
	for _, o := range opts {
		if o == nil {
			t.Fatal("drivertest: nil Option")
		}
		if err := o(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("Roles", s.testRoles)
	t.Run("Insert", s.testInsert)
	t.Run("InsertConcurrent", s.testInsertConcurrent)
	t.Run("InsertOrdered", s.testInsertOrdered)
	t.Run("InsertOrderedConcurrent", s.testInsertOrderedConcurrent)
	t.Run("GetMissing", s.testGetMissing)
	t.Run("GetRun", s.testGetRun)
	t.Run("Delete", s.testDelete)
	t.Run("DeleteConcurrent", s.testDeleteConcurrent)
	t.Run("SegmentDocs", s.testSegmentDocs)
	t.Run("LaneDocs", s.testLaneDocs)
	t.Run("InsertEach", s.testInsertEach)
	t.Run("RecentKeys", s.testRecentKeys)
	t.Run("Compact", s.testCompact)
	t.Run("DropGates", s.testDropGates)
	t.Run("PutKeys", s.testPutKeys)
	t.Run("ListKeys", s.testListKeys)
	t.Run("ListKeysStream", s.testListKeysStream)
	t.Run("Sessions", s.testSessions)
	t.Run("SessionFirst", s.testSessionFirst)
	t.Run("RenewSessionNeverLowers", s.testRenewNeverLowers)
	t.Run("RenewSessionMissing", s.testRenewMissing)
	t.Run("ServerTime", s.testServerTime)
	t.Run("Feed", s.testFeed)
	t.Run("Done", s.testDone)
	t.Run("Peers", s.testPeers)
	t.Run("Revoke", s.testRevoke)
	t.Run("RevokeLeavesSessions", s.testRevokeLeavesSessions)
	t.Run("Stall", s.testStall)
	t.Run("Waits", s.testWaits)
	t.Run("Deadlocks", s.testDeadlocks)
	t.Run("Outage", s.testOutage)
	t.Run("UptimeStamps", s.testUptimeStamps)
	t.Run("UptimeRead", s.testUptimeRead)
	t.Run("UptimeInsert", s.testUptimeInsert)
}

// store opens a fresh store and prepares it (twice: a second Prepare must
// succeed as well).
func (s *suite) store(t *testing.T) (driver.Store, context.Context) {
	t.Helper()
	return s.prepare(t, s.open(t))
}

// prepare prepares st, twice.
func (s *suite) prepare(t *testing.T, st driver.Store) (driver.Store, context.Context) {
	t.Helper()
	ctx := testCtx(t)
	for range 2 {
		if err := st.Prepare(ctx); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
	}
	return st, ctx
}

// testCtx bounds a subtest, so that a hung driver fails it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// now is the store's time, for the times the suite sends: a little in the
// future of the store's clock, as the protocol's Sent is, and with a
// fraction of a millisecond, to show rounding.
func now(st driver.Store) time.Time {
	return st.ServerTime().Latest.Truncate(time.Millisecond).Add(123456 * time.Nanosecond)
}

// claim returns epoch's claim of key, every field set.
func claim(key string, epoch uint64, nonce string, sent time.Time) driver.Doc {
	return driver.Doc{
		ID: driver.ClaimID(key, epoch), Key: key, Epoch: epoch, Kind: driver.KindClaim, Nonce: nonce,
		Session: "c0000000000000000001", Owner: "owner-" + nonce, Sent: sent,
		TTL: 15 * time.Second, Exp: sent.Truncate(time.Millisecond).Add(15 * time.Second), Grace: 30 * time.Second,
		Mode: driver.Weighted, Weight: 3, Limit: 1 << 40, Host: "host.example", PID: 4242,
		Seg: testSeg, History: "history-" + nonce, Waiter: "set-" + nonce,
	}
}

// shadow returns the shadow of c.
func shadow(c driver.Doc) driver.Doc {
	return driver.Doc{ID: driver.ShadowID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: driver.KindShadow,
		Nonce: c.Nonce, Session: c.Session, Sent: c.Sent}
}

// end returns the marker of kind that ends c.
func end(c driver.Doc, kind string, sent time.Time) driver.Doc {
	return driver.Doc{ID: driver.EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: kind,
		Nonce: c.Nonce, Session: c.Session, Sent: sent}
}

func insert(t *testing.T, ctx context.Context, st driver.Store, docs ...driver.Doc) {
	t.Helper()
	for _, d := range docs {
		if err := st.Insert(ctx, d); err != nil {
			t.Fatalf("Insert(%s): %v", d.ID, err)
		}
	}
}

// get reads id, failing t on an error.
func get(t *testing.T, ctx context.Context, st driver.Store, id string) (driver.Doc, bool) {
	t.Helper()
	d, found, err := st.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return d, found
}

// checkStored reads want.ID and reports how it differs from want.
func checkStored(t *testing.T, ctx context.Context, st driver.Store, want driver.Doc) {
	t.Helper()
	got, found := get(t, ctx, st, want.ID)
	if !found {
		t.Errorf("Get(%s): not found", want.ID)
		return
	}
	if diff := docDiff(got, want); diff != "" {
		t.Errorf("Get(%s): %s", want.ID, diff)
	}
}

// docDiff describes how got differs from want: in any field, but Sent,
// which may be rounded up to the millisecond.
func docDiff(got, want driver.Doc) string {
	if got.Sent.Before(want.Sent) || !got.Sent.Before(want.Sent.Add(time.Millisecond)) {
		return fmt.Sprintf("Sent %v, want %v (or rounded up to the millisecond)", got.Sent, want.Sent)
	}
	if !got.Exp.Equal(want.Exp) {
		return fmt.Sprintf("Exp %v, want %v", got.Exp, want.Exp)
	}
	g, w := got, want
	g.Sent, w.Sent, g.Exp, w.Exp = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if g != w {
		return fmt.Sprintf("got %+v, want %+v", g, w)
	}
	return ""
}

// need returns role, one of the store's Roles named name, and skips t if
// the store serves none.
func need[R any](t *testing.T, role R, name string) R {
	t.Helper()
	if any(role) == nil {
		t.Skipf("the store serves no Roles.%s", name)
	}
	return role
}
