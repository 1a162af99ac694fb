package hint_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestReleaseHintsOnlyTheNextWaiter: a release sends its end to the
// process that waits for the claim released, the next holder, and not to
// a process that waits for a later claim of the key (here the spy, which
// announces it waits behind the next holder): that one cannot go on this
// end, and the hint would cost its process a wake-up and a MAC check.
// Before, every process that waited for a claim of the key got every end.
//
// a may take b's announcement only after the spy's (b sends them to a
// and to the spy in either order), and then the end goes to every waiter
// of the key, as when no announcement for the claim arrived: so the test
// tries up to three times, and fails only if the spy got an end every
// time. Without the targeting it gets one every time.
func TestReleaseHintsOnlyTheNextWaiter(t *testing.T) {
	var n int
	for try := range 3 {
		if n = endsToTheSpy(t); n == 0 {
			return
		}
		t.Logf("try %d: the spy received %d ends of the released claim", try+1, n)
	}
	t.Errorf("the spy, waiting behind the next holder, received %d ends of the released claim, want none", n)
}

// endsToTheSpy runs one release behind which the spy waits for the next
// holder's claim, and returns how many ends of the key it received.
func endsToTheSpy(t *testing.T) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	a := newProcess(t, store, s, "")
	b := newProcess(t, store, s, "")
	c := contend(t, ctx, a, b, s)
	next := c.announced.Epoch + 1 // b's claim: the first above the holder's
	// The spy announces it waits for b's claim, then for a claim a holds
	// on another key, which a answers with a Held hint: datagrams between
	// two processes arrive in order on loopback, and a takes them one at a
	// time, so once the Held comes back a has taken the first.
	probe := mutex(t, a.c, "probe")
	if err := probe.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	until := store.ServerTime().Latest.Add(time.Hour)
	for _, e := range []driver.Event{
		{Kind: driver.Waiting, Key: "k", Epoch: next, Until: until, Proc: "spy"},
		{Kind: driver.Waiting, Key: "probe", Epoch: probe.Token(), Until: until, Proc: "spy"},
	} {
		if err := s.f.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s.waitFor(t, func(e driver.Event) bool { return e.Kind == driver.Held && e.Key == "probe" })
	c.releasing.Store(true)
	if err := c.held.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-c.locked; err != nil {
		t.Fatalf("the next waiter never took its turn: %v", err)
	}
	// a now waits behind b: its announcement goes to every process, the
	// spy too, after the end (datagrams between two processes arrive in
	// order on loopback).
	again := make(chan error, 1)
	go func() { again <- c.held.LockContext(ctx) }()
	s.waitFor(t, func(e driver.Event) bool { return e.Kind == driver.Waiting && e.Key == "k" && e.Epoch == next })
	n := s.count(func(e driver.Event) bool { return e.Kind == driver.Ended && e.Key == "k" })
	c.waiter.Unlock()
	if err := <-again; err != nil {
		t.Fatal(err)
	}
	c.held.Unlock()
	probe.Unlock()
	return n
}

// waitFor waits until the spy received an event that matches.
func (s *spy) waitFor(t *testing.T, match func(driver.Event) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for s.count(match) == 0 {
		select {
		case <-s.got:
		case <-timeout:
			t.Fatal("the event never came")
		}
	}
}

// count returns how many of the events the spy received match.
func (s *spy) count(match func(driver.Event) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if match(e) {
			n++
		}
	}
	return n
}

// TestReleaseWakesEveryWaiterItCanLetGo: an end that can let several
// waiters go reaches each of their processes: two readers (in two
// processes) behind a writer, and a full Semaphore's waiter, whose
// announcements name every unit it passed, take their turn on the
// release with the store's feed off and polls an hour apart, so only a
// hint can wake them in time.
func TestReleaseWakesEveryWaiterItCanLetGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	a := newProcess(t, store, s, "")
	b := newProcess(t, store, s, "")
	c := newProcess(t, store, s, "")
	// announced waits until n announcements for claims of name's key
	// came (the store's key is name under its kind's prefix).
	announced := func(name string, n int) {
		t.Helper()
		waitUntil(t, func() bool {
			return s.count(func(e driver.Event) bool {
				return e.Kind == driver.Waiting && strings.HasSuffix(e.Key, "/"+name)
			}) >= n
		})
	}

	rw := func(p process) *dsync.RWMutex {
		m, err := dsync.NewRWMutex(p.c, "rw")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	writer, r1, r2 := rw(a), rw(b), rw(c)
	if err := writer.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 2)
	go func() { read <- r1.RLockContext(ctx) }()
	go func() { read <- r2.RLockContext(ctx) }()
	announced("rw", 2)
	writer.Unlock()
	for range 2 {
		if err := <-read; err != nil {
			t.Fatalf("a reader behind the writer never took its turn: %v", err)
		}
	}
	r1.RUnlock()
	r2.RUnlock()

	sem := func(p process) *dsync.Semaphore {
		m, err := dsync.NewSemaphore(p.c, "sem", 2)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	sa, sb, sc := sem(a), sem(b), sem(c)
	for _, m := range []*dsync.Semaphore{sa, sb} {
		if err := m.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	acquired := make(chan error, 1)
	go func() { acquired <- sc.Acquire(ctx, 1) }()
	announced("sem", 2) // one for each unit it passed
	sa.Release(1)
	if err := <-acquired; err != nil {
		t.Fatalf("the Semaphore's waiter never took its turn: %v", err)
	}
	sb.Release(1)
	sc.Release(1)
}
