package dsync

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/dsync/internal/wake"
)

// hintNet stands for direct hints between the simulated processes of a
// test: each Client's feed (netFeed) delivers what it publishes to the
// others, in goroutines of their own (in any order), but what drop
// refuses, as alter rewrites it. The store's feed is paused in each, as
// in a process that hints reach (dsync/hint's pause.go).
type hintNet struct {
	mu      sync.Mutex
	members map[*netFeed]bool
	drop    func(driver.Event) bool
	alter   func(*driver.Event)
	// targeted: an end goes only to the members that announced they wait
	// for that claim (to every member if none did), a Held only to them,
	// as dsync/hint sends them (endTargetsLocked); otherwise every event
	// goes to every member.
	targeted bool
	waiting  map[wake.ClaimID]map[*netFeed]bool
	// heldBy: for each claim, the member that sent Held hints about it.
	heldBy map[wake.ClaimID]*netFeed
}

type netFeed struct {
	net *hintNet
	hmu sync.Mutex
	h   driver.FeedHandler
}

// member is the test option that gives a Client a feed of n.
func (n *hintNet) member() ClientOption {
	return func(c *clientConfig) error {
		c.directFeed = func(driver.Feed) driver.Feed { return &netFeed{net: n} }
		return nil
	}
}

func (f *netFeed) Follow(h driver.FeedHandler) func() {
	f.hmu.Lock()
	f.h = h
	f.hmu.Unlock()
	h.Down(hint.ErrStoreFeedPaused, false)
	f.net.mu.Lock()
	if f.net.members == nil {
		f.net.members = make(map[*netFeed]bool)
	}
	f.net.members[f] = true
	f.net.mu.Unlock()
	return func() {
		f.net.mu.Lock()
		delete(f.net.members, f)
		f.net.mu.Unlock()
	}
}

func (f *netFeed) Replay() time.Duration { return 0 }

// Tell is dsync/hint's Feed.Tell: a need told again goes to the
// claim's owner, whose feed records it and tells its handler nothing;
// only if the owner has no record of e's Waiting (none came from f) is
// e published as that Waiting. drop and alter see it as a Waiting.
func (f *netFeed) Tell(e driver.Event) bool {
	f.net.mu.Lock()
	k := wake.ClaimID{Key: e.Key, Epoch: e.Epoch}
	if owner := f.net.heldBy[k]; owner == nil || !f.net.members[owner] || !f.net.waiting[k][f] {
		f.net.mu.Unlock()
		_ = f.Publish(context.Background(), e)
		return true
	}
	defer f.net.mu.Unlock()
	if f.net.drop != nil && f.net.drop(e) {
		return true
	}
	if f.net.alter != nil {
		f.net.alter(&e)
	}
	return true
}

func (f *netFeed) Publish(_ context.Context, e driver.Event) error {
	f.net.mu.Lock()
	defer f.net.mu.Unlock()
	if f.net.drop != nil && f.net.drop(e) {
		return nil
	}
	if f.net.alter != nil {
		f.net.alter(&e)
	}
	to := f.net.members
	if f.net.targeted {
		k := wake.ClaimID{Key: e.Key, Epoch: e.Epoch}
		switch e.Kind {
		case driver.Waiting:
			if f.net.waiting == nil {
				f.net.waiting = make(map[wake.ClaimID]map[*netFeed]bool)
			}
			if f.net.waiting[k] == nil {
				f.net.waiting[k] = make(map[*netFeed]bool)
			}
			f.net.waiting[k][f] = true
		case driver.Ended:
			if len(f.net.waiting[k]) > 0 {
				to = f.net.waiting[k]
			}
		case driver.Held:
			to = f.net.waiting[k]
		}
	}
	if e.Kind == driver.Held {
		if f.net.heldBy == nil {
			f.net.heldBy = make(map[wake.ClaimID]*netFeed)
		}
		f.net.heldBy[wake.ClaimID{Key: e.Key, Epoch: e.Epoch}] = f
	}
	for m := range to {
		if m != f && f.net.members[m] {
			go func() {
				m.hmu.Lock()
				defer m.hmu.Unlock()
				m.h.Event(e)
			}()
		}
	}
	return nil
}

// readCounter is a store that counts its reads (Get, GetSession): it
// reads no runs.
type readCounter struct {
	driver.Store
	reads atomic.Int64
}

func (r *readCounter) Roles() driver.Roles {
	roles := r.Store.Roles()
	roles.Runs = nil
	return roles
}

func (r *readCounter) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	r.reads.Add(1)
	return r.Store.Get(ctx, id)
}

func (r *readCounter) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	r.reads.Add(1)
	return r.Store.GetSession(ctx, id)
}

func countingReads(rc *readCounter) ClientOption {
	return func(c *clientConfig) error {
		c.test.wrapStore = func(s driver.Store) driver.Store { rc.Store = s; return rc }
		return nil
	}
}

// heldHandoff starts an owner holding "k" and a waiter of another process
// in Lock behind it, over net, and returns them once the waiter waits;
// the waiter's Lock returns on locked.
func heldHandoff(t *testing.T, net *hintNet, rc *readCounter) (owner *Mutex, locked chan error) {
	t.Helper()
	store := memory.New()
	a := NewMemClientOn(store, net.member())
	b := NewMemClientOn(store, net.member(), countingReads(rc))
	t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
	return queueBehind(t, a, b, time.Second) // it queues, announces itself, hears Held
}

// queueBehind makes a hold "k" in a, and a Lock of it in b that waits
// behind it (and unlocks once it holds), for waited; the waiter's Lock
// returns on locked.
func queueBehind(t *testing.T, a, b *MemClient, waited time.Duration) (owner *Mutex, locked chan error) {
	t.Helper()
	owner, err := NewMutex(a.Client, "k")
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := NewMutex(b.Client, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.LockContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	locked = make(chan error, 1)
	go func() {
		err := waiter.LockContext(t.Context())
		if err == nil {
			err = waiter.UnlockContext(context.Background())
		}
		locked <- err
	}()
	time.Sleep(waited)
	synctest.Wait()
	return owner, locked
}

// TestHeldHintsSpareTheWaitersLooks: a waiter in a process that reads no
// store stream (hints reach it), whose claim's owner tells it by Held
// hints that the claim has not ended, does not poll: over 8 s it reads
// the store twice at most (without Held hints, every 100 ms poll), over
// a minute not at all (no safety poll, and no read of the holder's
// session: the Held hints carry its expiry), and it holds as the owner's
// end comes.
func TestHeldHintsSpareTheWaitersLooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, rc := &hintNet{}, &readCounter{}
		owner, locked := heldHandoff(t, net, rc)
		before := rc.reads.Load()
		time.Sleep(8 * time.Second)
		if n := rc.reads.Load() - before; n > 2 {
			t.Errorf("the waiter read the store %d times in 8 s while Held hints came", n)
		}
		// Over a minute: nothing (the holder's session was read each
		// time it may have expired, every 15 s, before Held hints
		// carried its expiry).
		before = rc.reads.Load()
		time.Sleep(time.Minute)
		if n := rc.reads.Load() - before; n > 0 {
			t.Errorf("the waiter read the store %d times in a minute while Held hints came, want none", n)
		}
		start := time.Now()
		owner.Unlock()
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 0 {
			t.Errorf("the waiter held %v after the end, want at once (the Ended hint)", d)
		}
	})
}

// TestLostHintsCostAtMostThePollInterval: a waiter in a process that
// reads no store stream holds within the poll interval of the owner's
// Unlock, not at its safety poll, when every Ended hint is lost (it
// relied on Held hints, and looks once a poll interval passed since the
// last), and when every Held and Ended hint is lost (it polls).
func TestLostHintsCostAtMostThePollInterval(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(driver.Event) bool
		lost string
	}{
		{"End", func(e driver.Event) bool { return e.Kind == driver.Ended }, "the end"},
		{"HeldAndEnd", func(e driver.Event) bool { return e.Kind != driver.Waiting }, "Held hints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				owner, locked := heldHandoff(t, &hintNet{drop: tc.drop}, &readCounter{})
				time.Sleep(3 * time.Second)
				start := time.Now()
				owner.Unlock()
				if err := <-locked; err != nil {
					t.Fatal(err)
				}
				// NewMemClientOn polls every 100 ms; a wait grows by 1% at most.
				if d := time.Since(start); d > 101*time.Millisecond {
					t.Errorf("with %s lost, the waiter held %v after the end, want at most the poll interval", tc.lost, d)
				}
			})
		})
	}
}
