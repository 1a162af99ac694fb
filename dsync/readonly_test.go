package dsync_test

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
)

// readOnlyStore is a memory store as a database user that may only read
// sees it: every write is refused, and so is Prepare (which, on MongoDB,
// creates the collections and their index and samples the clock with a
// write); PrepareRead (driver.ReadPreparer) is allowed. It records the
// writes it refused.
type readOnlyStore struct {
	*memory.Store
	mu      sync.Mutex
	refused []string
}

var errReadOnly = errors.New("not authorized: the user may only read")

func (s *readOnlyStore) refuse(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, op)
	return errReadOnly
}

func (s *readOnlyStore) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

func (s *readOnlyStore) PrepareRead(ctx context.Context) error { return s.Store.Prepare(ctx) }
func (s *readOnlyStore) Prepare(context.Context) error         { return s.refuse("Prepare") }
func (s *readOnlyStore) Insert(context.Context, driver.Doc) error {
	return s.refuse("Insert")
}
func (s *readOnlyStore) InsertOrdered(context.Context, []driver.Doc) (int, error) {
	return 0, s.refuse("InsertOrdered")
}
func (s *readOnlyStore) InsertEach(_ context.Context, docs []driver.Doc) []error {
	errs := make([]error, len(docs))
	for i := range errs {
		errs[i] = s.refuse("InsertEach")
	}
	return errs
}
func (s *readOnlyStore) Delete(context.Context, []string) error { return s.refuse("Delete") }
func (s *readOnlyStore) Compact(context.Context, time.Time, []string) (int64, error) {
	return 0, s.refuse("Compact")
}
func (s *readOnlyStore) DropGates(context.Context, int64, time.Time) error {
	return s.refuse("DropGates")
}
func (s *readOnlyStore) PutKeys(context.Context, []string) error { return s.refuse("PutKeys") }
func (s *readOnlyStore) InsertSession(context.Context, driver.Session) error {
	return s.refuse("InsertSession")
}
func (s *readOnlyStore) RenewSession(context.Context, string, int, time.Time) (bool, error) {
	return false, s.refuse("RenewSession")
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
		ro := &readOnlyStore{Store: mem}
		reader := newClient(t, ro)

		// Nothing there yet: no keys, no queue, no protocol document left.
		if got := listAll(t, reader, dsync.ListOptions{}); len(got) != 0 {
			t.Errorf("List of an empty store = %+v, want nothing", got)
		}
		if q, err := reader.Queue(ctx, "k"); err != nil || len(q) != 0 {
			t.Errorf("Queue of an empty store = %+v, %v; want none", q, err)
		}
		if ok, err := reader.HasKey(ctx, "k"); err != nil || ok {
			t.Errorf("HasKey of an empty store = %v, %v; want false", ok, err)
		}
		if o, err := reader.ListOrder(ctx); err != nil || o != dsync.OrderBytes {
			t.Errorf("ListOrder = %v, %v; want %v", o, err, dsync.OrderBytes)
		}
		if _, found, err := mem.Get(ctx, driver.ProtocolID); err != nil || found {
			t.Errorf("after reads of an empty store, its protocol document: found %v, %v; want none", found, err)
		}

		// A writer of another span holds a key, another waits.
		span := 10 * time.Minute
		w1 := newClient(t, mem, dsync.ClientWithBucketSpan(span), dsync.WithTTL(time.Minute))
		w2 := newClient(t, mem, dsync.ClientWithBucketSpan(span))
		held := newMutex(t, w1, "a/held")
		held.Lock()
		waiting := newMutex(t, w2, "a/held")
		waited := make(chan struct{})
		go func() {
			waiting.Lock()
			close(waited)
		}()
		synctest.Wait() // the waiter queued, and the keys are recorded

		all := listAll(t, reader, dsync.ListOptions{})
		if len(all) != 1 || all[0].Key != "a/held" {
			t.Fatalf("List through the read-only Client = %+v, want a/held", all)
		}
		if q := all[0].Queue; len(q) != 2 || q[0].Token != held.Token() || !q[0].Holds || q[1].Holds {
			t.Errorf("the queue of a/held read through the read-only Client = %+v, want its holder (token %d) and a waiter", q, held.Token())
		}
		if ok, err := reader.HasKey(ctx, "a/held"); err != nil || !ok {
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
		ro := &readOnlyStore{Store: mem}
		watched, err := dsync.NewOnce(newClient(t, ro), "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if done, err := watched.Done(ctx); err != nil || done {
			t.Errorf("Done before any run = %v, %v; want false, nil", done, err)
		}
		runner, err := dsync.NewOnce(newClient(t, mem), "nightly")
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
