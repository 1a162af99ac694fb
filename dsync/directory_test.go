package dsync_test

import (
	"context"
	"errors"
	"fmt"
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

// putStore is a memory store that counts the keys put in its directory,
// can fail the first puts, and can hold each put until released.
type putStore struct {
	*memory.Store
	mu      sync.Mutex
	puts    []string      // the keys of every PutKeys call, in order
	calls   int           // PutKeys calls
	fail    int           // fail this many more puts
	release chan struct{} // if not nil, a put waits for it to close, or for its context
}

var errPut = errors.New("put failed")

// newPutStore returns a putStore that fails the first fail puts, and
// holds each until release is closed (if not nil).
func newPutStore(fail int, release chan struct{}) *putStore {
	s := &putStore{fail: fail, release: release}
	s.Store = memory.New().Intercept(s.put)
	return s
}

func (s *putStore) put(ctx context.Context, c memory.Call, _ func() error) error {
	if c.Op != "PutKeys" {
		return nil
	}
	s.mu.Lock()
	s.puts = append(s.puts, c.Keys...)
	s.calls++
	release, fail := s.release, s.fail > 0
	if fail {
		s.fail--
	}
	s.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if fail {
		return errPut
	}
	return nil
}

func (s *putStore) putCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.puts)
}

// lockOnce locks key through c and unlocks it.
func lockOnce(t *testing.T, c *dsync.Client, key string) {
	t.Helper()
	m := newMutex(t, c, key)
	ctx := context.Background()
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// listAll reads a whole listing.
func listAll(t *testing.T, c *dsync.Client, opts statuspage.ListOptions) []statuspage.KeyState {
	t.Helper()
	var all []statuspage.KeyState
	for ks, err := range statuspage.NewReader(c).List(context.Background(), opts) {
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		all = append(all, ks)
	}
	return all
}

func keysOf(states []statuspage.KeyState) []string {
	keys := make([]string, len(states))
	for i, s := range states {
		keys[i] = s.Key
	}
	return keys
}

// TestListKeysAndQueues: List gives every key claimed through a Client,
// with its queue (empty once nothing holds or waits), selected by
// prefix, after and limit, in order of bytes on the memory store; a key
// that has documents but was never claimed through a Client of this
// release is listed once it is claimed again.
func TestListKeysAndQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := newClient(t, store, dsync.ClientWithTTL(time.Minute)), newClient(t, store)
		ctx := context.Background()
		// A key an older release used: documents, no directory entry.
		old := driver.Doc{ID: driver.ClaimID("old", 1), Key: "old", Epoch: 1, Kind: driver.KindClaim, Nonce: "n", Session: "s"}
		if err := store.Insert(ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := store.Insert(ctx, driver.Doc{ID: driver.EndID("old", 1, "n"), Key: "old", Epoch: 1, Kind: driver.KindRelease, Nonce: "n", Session: "s", Clear: true}); err != nil {
			t.Fatal(err)
		}

		lockOnce(t, a, "b/free")
		held := newMutex(t, a, "a/held")
		held.Lock()
		waiting := newMutex(t, b, "a/held")
		waited := make(chan struct{})
		go func() {
			waiting.Lock()
			close(waited)
		}()
		synctest.Wait() // the waiter queued, and the puts are done

		if o, err := statuspage.NewReader(a).ListOrder(ctx); err != nil || o != statuspage.OrderBytes {
			t.Errorf("ListOrder = %v, %v; want %v", o, err, statuspage.OrderBytes)
		}
		all := listAll(t, a, statuspage.ListOptions{})
		if got := keysOf(all); !slices.Equal(got, []string{"a/held", "b/free"}) {
			t.Fatalf("List() keys = %q, want a/held and b/free (old was never claimed through this release)", got)
		}
		if q := all[0].Queue; len(q) != 2 || q[0].Token != held.Token() || q[1].Token != held.Token()+1 {
			t.Errorf("the queue of a/held = %+v, want its holder (token %d) and the waiter behind it", q, held.Token())
		}
		if q := all[1].Queue; len(q) != 0 {
			t.Errorf("the queue of b/free = %+v, want none: nothing holds or waits", q)
		}
		for _, c := range []struct {
			opts statuspage.ListOptions
			want []string
		}{
			{statuspage.ListOptions{Prefix: "a/"}, []string{"a/held"}},
			{statuspage.ListOptions{After: "a/held"}, []string{"b/free"}},
			{statuspage.ListOptions{Limit: 1}, []string{"a/held"}},
			{statuspage.ListOptions{Prefix: "c"}, nil},
		} {
			if got := keysOf(listAll(t, b, c.opts)); !slices.Equal(got, c.want) {
				t.Errorf("List(%+v) = %q, want %q", c.opts, got, c.want)
			}
		}
		for key, want := range map[string]bool{"a/held": true, "b/free": true, "old": false, "a": false} {
			if got, err := statuspage.NewReader(b).HasKey(ctx, key); err != nil || got != want {
				t.Errorf("HasKey(%q) = %v, %v; want %v", key, got, err, want)
			}
		}
		for _, err := range statuspage.NewReader(a).List(ctx, statuspage.ListOptions{Limit: -1}) {
			if err == nil {
				t.Error("List with limit -1: no error")
			}
		}

		held.Unlock()
		<-waited
		waiting.Unlock()
		lockOnce(t, b, "old")
		synctest.Wait()
		if got := keysOf(listAll(t, a, statuspage.ListOptions{})); !slices.Equal(got, []string{"a/held", "b/free", "old"}) {
			t.Errorf("List() after old was claimed again = %q, want it listed", got)
		}
	})
}

// TestListStopsWhenTheCallerDoes: a listing reads each key's queue when
// it comes to the key, and stops at the caller's break.
func TestListStopsWhenTheCallerDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		c := newClient(t, store)
		for _, k := range []string{"k1", "k2", "k3"} {
			lockOnce(t, c, k)
		}
		synctest.Wait()
		n := 0
		for ks, err := range statuspage.NewReader(c).List(context.Background(), statuspage.ListOptions{}) {
			if err != nil || ks.Key != "k1" {
				t.Fatalf("first key %q, %v; want k1", ks.Key, err)
			}
			n++
			break
		}
		if n != 1 {
			t.Errorf("listed %d keys, want 1", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, err := range statuspage.NewReader(c).List(ctx, statuspage.ListOptions{}) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("List with an ended context: %v, want context.Canceled", err)
			}
		}
	})
}

// TestKeyRecordedOffTheLockPath: the first claim of a key puts it in the
// directory in the background: Lock and Unlock return while the put is
// still in flight, later claims of the key put nothing, and Close waits
// for the put.
func TestKeyRecordedOffTheLockPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		store := newPutStore(0, release)
		c, err := dsync.NewClient(store)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			lockOnce(t, c, "k") // returns while the first put waits
		}
		synctest.Wait()
		if got := store.putCalls(); !slices.Equal(got, []string{"k"}) {
			t.Errorf("puts after 5 Lock+Unlock of k, the first put in flight: %q, want one of k", got)
		}
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a put was in flight", err)
		default:
		}
		close(release)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if got := store.Keys(); !slices.Equal(got, []string{"k"}) {
			t.Errorf("directory after Close: %q, want k", got)
		}
	})
}

// TestKeysRecordedInBatches: keys claimed while a put is in flight are
// recorded together, up to 500 a request, each once: a process that
// claims thousands of new keys does not trail its claims with a put per
// key.
func TestKeysRecordedInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		store := newPutStore(0, release)
		c := newClient(t, store)
		const n = 1200
		lockOnce(t, c, "k0000")
		synctest.Wait() // its put is in flight, waiting for release
		for i := 1; i < n; i++ {
			lockOnce(t, c, fmt.Sprintf("k%04d", i))
		}
		synctest.Wait()
		close(release)
		synctest.Wait()
		store.mu.Lock()
		calls, puts := store.calls, len(store.puts)
		store.mu.Unlock()
		// The first put took k0000 alone; the rest waited for it, and go
		// in batches of PutBatch (500).
		if calls != 4 || puts != n {
			t.Errorf("%d keys claimed during a put: %d puts of %d keys, want 4 puts of %d", n, calls, puts, n)
		}
		if got := len(store.Keys()); got != n {
			t.Errorf("directory holds %d keys, want %d", got, n)
		}
	})
}

// TestKeyRecordedAgainAfterFailureAndAfterAnHour: a put that failed is
// tried again a second later, without another claim (a key used once is
// claimed once); a key recorded is recorded again at a claim an hour
// later, so a directory an operator emptied fills up again with the keys
// in use.
func TestKeyRecordedAgainAfterFailureAndAfterAnHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newPutStore(1, nil)
		c := newClient(t, store)
		lockOnce(t, c, "k")
		synctest.Wait()
		if got := store.Keys(); len(got) != 0 {
			t.Fatalf("directory after a failed put: %q", got)
		}
		lockOnce(t, c, "k") // while the put waits to be tried again: no put of its own
		synctest.Wait()
		time.Sleep(dsync.PutPause)
		synctest.Wait()
		lockOnce(t, c, "k")
		synctest.Wait()
		if got, keys := store.putCalls(), store.Keys(); !slices.Equal(got, []string{"k", "k"}) || !slices.Equal(keys, []string{"k"}) {
			t.Errorf("puts %q, directory %q; want the failed put, one more a second later, none at the later claims, and k recorded", got, keys)
		}

		store.Reset() // an operator empties the collections
		time.Sleep(59 * time.Minute)
		lockOnce(t, c, "k")
		synctest.Wait()
		if got := store.Keys(); len(got) != 0 {
			t.Errorf("directory 59 minutes after the put, emptied: %q; want it still empty (the key is trusted to be there)", got)
		}
		time.Sleep(2 * time.Minute)
		lockOnce(t, c, "k")
		synctest.Wait()
		if got := store.Keys(); !slices.Equal(got, []string{"k"}) {
			t.Errorf("directory after a claim over an hour after the put: %q, want k recorded again", got)
		}
	})
}

// TestFailedPutsGiveUpAfterTheirRetries: a put that keeps failing is tried
// PutRetries more times, at doubling pauses, then waits for a later claim
// of its key; Close does not wait for a pause.
func TestFailedPutsGiveUpAfterTheirRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newPutStore(1000, nil)
		c := newClient(t, store)
		lockOnce(t, c, "k")
		time.Sleep(dsync.PutPause << (dsync.PutRetries + 1))
		synctest.Wait()
		if got := len(store.putCalls()); got != 1+dsync.PutRetries {
			t.Fatalf("%d puts of a key whose puts fail, want %d", got, 1+dsync.PutRetries)
		}
		lockOnce(t, c, "k")
		synctest.Wait()
		if got := len(store.putCalls()); got != 2+dsync.PutRetries {
			t.Fatalf("%d puts after a later claim, want %d", got, 2+dsync.PutRetries)
		}
		start := time.Now()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited >= dsync.PutPause {
			t.Errorf("Close waited %v for a pause before a retry", waited)
		}
	})
}

// TestCloseGivesUpOnAPutThatHangs: Close waits for a put in flight at
// most DefaultReleaseTimeout, then cancels it.
func TestCloseGivesUpOnAPutThatHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newPutStore(0, make(chan struct{}))
		c, err := dsync.NewClient(store)
		if err != nil {
			t.Fatal(err)
		}
		lockOnce(t, c, "k")
		synctest.Wait()     // k's put is in flight
		lockOnce(t, c, "j") // queued behind it
		start := time.Now()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != dsync.DefaultReleaseTimeout {
			t.Errorf("Close took %v with a put that never returns, want %v", took, dsync.DefaultReleaseTimeout)
		}
		if got := store.putCalls(); !slices.Equal(got, []string{"k"}) {
			t.Errorf("puts %q; want k's only: j's is given up with it", got)
		}
	})
}

// slowSessions is a store whose session reads take 10 ms and are counted:
// how many were under way at once.
type slowSessions struct {
	*memory.Store
	mu             sync.Mutex
	now, most, all int
}

func (s *slowSessions) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	s.mu.Lock()
	s.now++
	s.all++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	time.Sleep(10 * time.Millisecond)
	return s.Store.GetSession(ctx, id)
}

// TestListReadsQueuesAhead: List reads the queues of a few keys at once,
// no more than it promises, and hands them out in the store's order, each
// with its own queue; a caller that stops leaves no read behind (the
// bubble would not end).
func TestListReadsQueuesAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		holder := newClient(t, mem, dsync.ClientWithTTL(time.Minute))
		var keys []string
		for i := range 30 {
			key := fmt.Sprintf("k%02d", i)
			keys = append(keys, key)
			m := newMutex(t, holder, key)
			if err := m.LockContext(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		store := &slowSessions{Store: mem}
		c := newClient(t, store)
		var got []string
		for ks, err := range statuspage.NewReader(c).List(context.Background(), statuspage.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if len(ks.Queue) != 1 || ks.Queue[0].Key != ks.Key {
				t.Fatalf("%s: queue %+v, want its one holder", ks.Key, ks.Queue)
			}
			got = append(got, ks.Key)
		}
		if !slices.Equal(got, keys) {
			t.Errorf("listed %q, want %q", got, keys)
		}
		if store.most < 2 || store.most > dsync.ListAhead {
			t.Errorf("at most %d queue reads at once, want 2 to %d", store.most, dsync.ListAhead)
		}
		store.all = 0
		for _, err := range statuspage.NewReader(c).List(context.Background(), statuspage.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if store.all > dsync.ListAhead {
			t.Errorf("a listing stopped at its first key read %d queues, want at most %d", store.all, dsync.ListAhead)
		}
	})
}
