package dsyncmongo

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestRevokeWritesOnlyItsRecord is the regression test of the race of
// the first revoke (branch i46-revoke): it also updated the session's
// documents, and on FerretDB an update is a read and a later
// whole-document write, so it could land after a renewal its owner had
// counted and put back the older expiresAt (two holders). Seen through
// the command monitor, a Revoke now sends one insert, of its record
// (#revoke/<session>), and no update, findAndModify or delete; Revoked
// is one find. A renewal after the revoke still raises the expiry.
func TestRevokeWritesOnlyItsRecord(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	var (
		mu   sync.Mutex
		sent []*event.CommandStartedEvent
	)
	c := &counter{onStart: func(e *event.CommandStartedEvent) {
		mu.Lock()
		sent = append(sent, e)
		mu.Unlock()
	}}
	db := mongotest.NewDatabase(t, c.monitor())
	st := newBackend(t, db).s
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	const id = "revokedsession0000000"
	exp := st.ServerTime().Latest.Add(time.Minute).Truncate(time.Millisecond)
	if err := st.InsertSession(ctx, driver.Session{ID: id, ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	take := func() []*event.CommandStartedEvent {
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
	take()
	if err := st.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: id, By: "op", Reason: "stuck", At: st.ServerTime().Latest}); err != nil {
		t.Fatal(err)
	}
	var inserts int
	for _, e := range take() {
		switch e.CommandName {
		case "update", "findAndModify", "delete":
			t.Errorf("Revoke sent %s %s; want no write but its record's insert", e.CommandName, e.Command)
		case "insert":
			inserts++
			if !strings.Contains(e.Command.String(), `"#revoke/`+id+`"`) {
				t.Errorf("Revoke inserted %s; want only its record", e.Command)
			}
		}
	}
	if inserts != 1 {
		t.Errorf("Revoke sent %d inserts; want 1", inserts)
	}
	r, found, err := st.Roles().Revocations.Revoked(ctx, id)
	if err != nil || !found || r.By != "op" || r.Reason != "stuck" {
		t.Errorf("Revoked = %+v, found %v, %v; want op's record", r, found, err)
	}
	if cmds := take(); len(cmds) != 1 || cmds[0].CommandName != "find" {
		names := make([]string, len(cmds))
		for i, e := range cmds {
			names[i] = e.CommandName
		}
		t.Errorf("Revoked sent %v; want one find", names)
	}
	if found, err := st.RenewSession(ctx, id, 0, exp.Add(time.Hour)); err != nil || !found {
		t.Fatalf("RenewSession after Revoke = found %v, %v; want found", found, err)
	}
	if sess, _, err := st.GetSession(ctx, id); err != nil || !sess.ExpiresAt.Equal(exp.Add(time.Hour)) {
		t.Errorf("expiry after a renewal that followed the revoke = %v, %v; want %v", sess.ExpiresAt, err, exp.Add(time.Hour))
	}
}

// TestRevokedHolderLosesWithinATTL, on the real server: a holder whose
// session is revoked sees its Lost close within one TTL of the revoke
// (it reads its revocation every two thirds of a TTL), its Unlock reports ErrLost
// and ErrRevoked, and the waiter of another process holds only once the
// revoked session's lease has expired in store time, never before.
func TestRevokedHolderLosesWithinATTL(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	const ttl = 2 * time.Second
	ps := newProcs(t, 2, dsync.ClientWithTTL(ttl))
	a := newMutex(t, ps[0].b.Client, "revoked")
	b := newMutex(t, ps[1].b.Client, "revoked")
	if err := a.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	lost := a.Lost()
	q, err := statuspage.NewReader(ps[0].b.Client).Queue(ctx, "revoked")
	if err != nil || len(q) != 1 {
		t.Fatalf("Queue = %+v, %v; want the holder", q, err)
	}
	session := q[0].Session
	heldAt := make(chan time.Time, 1)
	go func() {
		if err := b.LockContext(ctx); err != nil {
			t.Error(err)
			close(heldAt)
			return
		}
		heldAt <- ps[1].b.s.ServerTime().Earliest
		_ = b.UnlockContext(ctx)
	}()
	for {
		q, err := statuspage.NewReader(ps[1].b.Client).Queue(ctx, "revoked")
		if err != nil {
			t.Fatal(err)
		}
		if len(q) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	revoked := time.Now()
	if err := ps[1].b.s.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: session, By: "op", Reason: "stuck", At: ps[1].b.s.ServerTime().Latest}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
		t.Logf("Lost closed %v after the revoke (TTL %v)", time.Since(revoked), ttl)
	case <-time.After(ttl):
		_ = a.UnlockContext(ctx)
		t.Fatalf("Lost still open one TTL (%v) after the revoke", ttl)
	}
	if err := a.UnlockContext(ctx); !errors.Is(err, dsync.ErrLost) || !errors.Is(err, dsync.ErrRevoked) {
		t.Errorf("Unlock after the revoke = %v; want ErrLost and ErrRevoked", err)
	}
	at, ok := <-heldAt
	if !ok {
		return
	}
	// The stored expiry only grows: read after the waiter held, it is at
	// least what it was then.
	sess, _, err := ps[1].b.s.GetSession(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(sess.ExpiresAt) {
		t.Errorf("the waiter held at %v (store time, earliest), before the revoked lease expired at %v", at, sess.ExpiresAt)
	}
	t.Logf("the waiter held %v after the revoked lease expired", at.Sub(sess.ExpiresAt))
}

// TestClientRevocationsCreatesNothing: statuspage.Reader.Revocations is a
// read, and on a database nothing has used it returns none and leaves the
// database as empty as it found it. It used to prepare the store first,
// which creates the collections and their indexes: dsync status and the
// status page, which read the revocations, created them in a database
// they were merely pointed at.
func TestClientRevocationsCreatesNothing(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	db := mongotest.NewDatabase(t)
	collections := func() []string {
		t.Helper()
		names, err := db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	c := newBackend(t, db).Client
	if names := collections(); len(names) != 0 {
		t.Fatalf("before any read, the database has the collections %q; want none", names)
	}
	rs, err := statuspage.NewReader(c).Revocations(ctx)
	if err != nil || len(rs) != 0 {
		t.Errorf("Revocations of an empty database = %+v, %v; want none", rs, err)
	}
	if names := collections(); len(names) != 0 {
		t.Errorf("after Revocations of an empty database, its collections are %q; want none", names)
	}
}
