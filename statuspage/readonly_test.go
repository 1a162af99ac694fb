package statuspage_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// readOnlyStore is a memory store as a database user that may only read
// sees it: every write is refused, and so is Prepare (which, on MongoDB,
// creates the collections and their index and samples the clock with a
// write); PrepareRead (driver.Roles.Reads) is allowed. It records the
// writes it refused.
//
// With allow, it sends the writes instead (and still records them), so
// that a test sees what a write sent from a read would do. With ahead,
// its clock for reads (ReadServerTime) runs that far ahead of the
// store's, as hello's does behind a mongos whose host clock is ahead of
// the shard's; so does ServerTime before Prepare has succeeded, which
// driver.Store leaves undefined until then (and which dsyncmongo's
// answered from hello before Prepare, until the review of the readonly
// branch).
type readOnlyStore struct {
	*memory.Store
	mem      *memory.Store
	allow    bool
	ahead    time.Duration
	mu       sync.Mutex
	refused  []string
	prepared bool
}

func newReadOnlyStore(mem *memory.Store, allow bool, ahead time.Duration) *readOnlyStore {
	s := &readOnlyStore{mem: mem, allow: allow, ahead: ahead}
	s.Store = mem.Intercept(s.refuse)
	return s
}

var errReadOnly = errors.New("not authorized: the user may only read")

// refuse refuses every write, and Prepare, unless allow.
func (s *readOnlyStore) refuse(_ context.Context, c memory.Call, _ func() error) error {
	if !c.Write && c.Op != "Prepare" {
		return nil
	}
	op := c.Op
	if op == "Insert" {
		op += " " + c.Docs[0].Kind
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, op)
	if !s.allow {
		return errReadOnly
	}
	s.prepared = s.prepared || c.Op == "Prepare"
	return nil
}

// Roles are the memory store's, and reads prepared without writing.
func (s *readOnlyStore) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Reads = s
	return r
}

func (s *readOnlyStore) PrepareRead(ctx context.Context) error { return s.mem.Prepare(ctx) }

// readTime is the store's time ahead by s.ahead.
func (s *readOnlyStore) readTime() driver.Interval {
	iv := s.Store.ServerTime()
	return driver.Interval{Earliest: iv.Earliest.Add(s.ahead), Latest: iv.Latest.Add(s.ahead)}
}

func (s *readOnlyStore) ReadServerTime() driver.Interval { return s.readTime() }
func (s *readOnlyStore) ServerTime() driver.Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.prepared {
		return s.readTime()
	}
	return s.Store.ServerTime()
}

func (s *readOnlyStore) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

// TestReadsOnlyRead: a Client's reads (List, Queue, HasKey, ListOrder)
// send no write and need no Prepare: over a store that refuses every
// write they list the keys and queues another Client wrote, on a store
// of another bucket span than the reader's default (learned by reading
// the protocol document); and on a store nothing has used they answer
// that nothing is there. They used to prepare the store (creating its
// collections) and insert its protocol document first, which a
// read-only database user is refused, and which left a database the
// reader was merely pointed at with dsync's collections.
func TestReadsOnlyRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		ro := newReadOnlyStore(mem, false, 0)
		reader := newClientOn(t, ro)

		// Nothing there yet: no keys, no queue, no protocol document left.
		if got := listAll(t, reader, statuspage.ListOptions{}); len(got) != 0 {
			t.Errorf("List of an empty store = %+v, want nothing", got)
		}
		if q, err := statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 0 {
			t.Errorf("Queue of an empty store = %+v, %v; want none", q, err)
		}
		if ok, err := statuspage.NewReader(reader).HasKey(ctx, "k"); err != nil || ok {
			t.Errorf("HasKey of an empty store = %v, %v; want false", ok, err)
		}
		if o, err := statuspage.NewReader(reader).ListOrder(ctx); err != nil || o != statuspage.OrderBytes {
			t.Errorf("ListOrder = %v, %v; want %v", o, err, statuspage.OrderBytes)
		}
		if _, found, err := mem.Get(ctx, driver.ProtocolID); err != nil || found {
			t.Errorf("after reads of an empty store, its protocol document: found %v, %v; want none", found, err)
		}

		// A writer of another span holds a key, another waits.
		span := 10 * time.Minute
		w1 := newClientOn(t, mem, dsync.ClientWithBucketSpan(span), dsync.ClientWithTTL(time.Minute))
		w2 := newClientOn(t, mem, dsync.ClientWithBucketSpan(span))
		held := newMutex(t, w1, "a/held")
		held.Lock()
		waiting := newMutex(t, w2, "a/held")
		waited := make(chan struct{})
		go func() {
			waiting.Lock()
			close(waited)
		}()
		synctest.Wait() // the waiter queued, and the keys are recorded

		all := listAll(t, reader, statuspage.ListOptions{})
		if len(all) != 1 || all[0].Key != "a/held" {
			t.Fatalf("List through the read-only Client = %+v, want a/held", all)
		}
		if q := all[0].Queue; len(q) != 2 || q[0].Token != held.Token() || !q[0].Holds || q[1].Holds {
			t.Errorf("the queue of a/held read through the read-only Client = %+v, want its holder (token %d) and a waiter", q, held.Token())
		}
		if ok, err := statuspage.NewReader(reader).HasKey(ctx, "a/held"); err != nil || !ok {
			t.Errorf("HasKey(a/held) = %v, %v; want true", ok, err)
		}
		if w := ro.writes(); len(w) != 0 {
			t.Errorf("the reads sent the writes %q; want none", w)
		}
		held.Unlock()
		<-waited
		waiting.Unlock()
	})
}

// TestReadsWriteNoDeadMarker: a read of a key's queue by a process whose
// clock for reads runs a minute (four TTLs) ahead of the store's (hello
// behind a mongos on a host whose clock is ahead) sends no write, and a
// claim it takes for expired goes on holding: another process's TryLock
// still fails. Queue reports the claim Expired, neither holding nor waiting.
// The Clients have no outage grace, so the read judges by the expiry
// alone, the judgement this test is about (with one, the record of
// up-time shows no renewal past the expiry, and the claim reads as held).
// Before, the read judged the claim's session by that clock, found it
// expired, and inserted the claim's dead marker: the holder still held
// (its lease was live) and the other process's TryLock held too.
func TestReadsWriteNoDeadMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		ahead := newReadOnlyStore(mem, true, time.Minute)
		reader := newClientOn(t, ahead, dsync.ClientWithOutageGrace(0))

		w1 := newClientOn(t, mem, dsync.ClientWithOutageGrace(0))
		held := newMutex(t, w1, "k")
		held.Lock()
		defer held.Unlock()

		q, err := statuspage.NewReader(reader).Queue(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if len(q) != 1 || q[0].Token != held.Token() || !q[0].Expired || q[0].Holds {
			t.Errorf("Queue(k) read a minute ahead = %+v, want the holder's claim (token %d) reported Expired, not Holds", q, held.Token())
		}
		for ks, err := range statuspage.NewReader(reader).List(ctx, statuspage.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if len(ks.Queue) != 1 || !ks.Queue[0].Expired {
				t.Errorf("List read a minute ahead: %s %+v, want the holder's claim reported Expired", ks.Key, ks.Queue)
			}
		}
		if w := ahead.writes(); len(w) != 0 {
			t.Errorf("the reads sent the writes %q; want none", w)
		}

		other := newMutex(t, newClientOn(t, mem), "k")
		if other.TryLock() {
			t.Errorf("another process's TryLock held while the holder (token %d) holds", held.Token())
			other.Unlock()
		}
		select {
		case <-held.Lost():
			t.Error("the holder lost its hold")
		default:
		}
	})
}

// TestOnceDoneOnlyReads: Once.Done, which dsync status calls for every
// idle Once it lists, only reads: over a store that refuses every write
// it answers false before the Once ran and true after another process's
// Do, and sends no write. It used to prepare the store for writes first
// (on MongoDB: create the collections and index, sample the clock with a
// write, insert the protocol document), which a read-only user is
// refused.
func TestOnceDoneOnlyReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		ro := newReadOnlyStore(mem, false, 0)
		watched, err := dsync.NewOnce(newClientOn(t, ro), "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if done, err := watched.Done(ctx); err != nil || done {
			t.Errorf("Done before any run = %v, %v; want false, nil", done, err)
		}
		runner, err := dsync.NewOnce(newClientOn(t, mem), "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if err := runner.Do(ctx, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if done, err := watched.Done(ctx); err != nil || !done {
			t.Errorf("Done after another process's run = %v, %v; want true, nil", done, err)
		}
		if w := ro.writes(); len(w) != 0 {
			t.Errorf("Done sent the writes %q; want none", w)
		}
	})
}
