package dsync_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// What the next holder reads once the claim ahead of it ended, whatever
// woke it (a direct hint, the store's event, a poll): the store must show
// it its turn, so a hint is only ever a hint. On a store that reads a
// stretch of a key's queue in one request (driver.RunReader: MongoDB),
// one run, from below the claim that ended up to its own claim; on a
// store that reads by ID only (FerretDB, where dsync/mongo answers
// ErrRunsUnsupported), two reads: the end marker, then its own claim
// read back (which shows the store was not emptied since its insert,
// so that the marker it read belongs to its history). The docs
// (README, docs/operations.md "Direct hints", ClientWithHints) state
// these counts.

// handoffReads hands key's lock (or a unit of a full Semaphore) from a
// process to one that waits for it, and returns what the waiter sent
// from the release's start until it held, by method.
func handoffReads(t *testing.T, runs, semaphore bool) map[string]int {
	var got map[string]int
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		var stores []*costStore
		client := func() *dsync.Client {
			s := newCostStore(mem, rand.New(rand.NewPCG(1, uint64(len(stores)))), runs)
			stores = append(stores, s)
			return newClient(t, s, dsync.ClientWithIdleAge(0))
		}
		ctx := context.Background()
		var take, give, wait func(context.Context) error
		if semaphore {
			// One unit held all along by a third process, the other by
			// the releaser.
			keep, _ := dsync.NewSemaphore(client(), "s", 2)
			if err := keep.Acquire(ctx, 1); err != nil {
				t.Fatal(err)
			}
			a, _ := dsync.NewSemaphore(client(), "s", 2)
			b, _ := dsync.NewSemaphore(client(), "s", 2)
			take = func(ctx context.Context) error { return a.Acquire(ctx, 1) }
			give = func(ctx context.Context) error { return a.ReleaseContext(ctx, 1) }
			wait = func(ctx context.Context) error { return b.Acquire(ctx, 1) }
		} else {
			a, _ := dsync.NewMutex(client(), "k")
			b, _ := dsync.NewMutex(client(), "k")
			take, give, wait = a.LockContext, a.UnlockContext, b.LockContext
		}
		waiter := stores[len(stores)-1]
		if err := take(ctx); err != nil {
			t.Fatal(err)
		}
		held := make(chan error, 1)
		go func() { held <- wait(ctx) }()
		time.Sleep(2 * time.Second) // the waiter waits, its first looks done
		synctest.Wait()
		waiter.take()
		if err := give(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		got = waiter.take()
	})
	return got
}

// reads keeps the reads of what a process sent.
func reads(sent map[string]int) map[string]int {
	r := map[string]int{}
	for m, k := range sent {
		switch m {
		case "Get claim", "Get marker", "Get gate", "Get other", "GetRun walk", "GetRun race", "GetSession":
			r[m] = k
		}
	}
	return r
}

func TestWokenWaiterReads(t *testing.T) {
	for _, tt := range []struct {
		name            string
		runs, semaphore bool
		want            map[string]int
	}{
		{"Mutex, by ID", false, false, map[string]int{"Get marker": 1, "Get claim": 1}},
		{"Mutex, by runs", true, false, map[string]int{"GetRun walk": 1}},
		// A full Semaphore's waiter re-reads only the claim whose release
		// woke it (the unit still held counts live unread: full), in the
		// run that confirms its own claim where runs are read. Its walk
		// reached its segment's first epoch (nothing below it but the
		// units it passed), so it reads the gate and the protocol document
		// too (proveGate), and then its own claim back: those the Mutex's
		// waiter, stopped by the release, does not need.
		{"Semaphore, by ID", false, true, map[string]int{"Get marker": 1, "Get gate": 1, "Get other": 1, "Get claim": 1}},
		{"Semaphore, by runs", true, true, map[string]int{"GetRun walk": 1, "Get gate": 1, "Get other": 1, "Get claim": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := reads(handoffReads(t, tt.runs, tt.semaphore))
			if !maps.Equal(got, tt.want) {
				t.Errorf("the woken waiter read %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWokenBehindAWithdrawnClaimWaitsForTheHolder: an Ended event says
// that the claim ahead ended, not how. A waiter woken by the end of a
// claim that was withdrawn (its Lock's context ended) reads that claim's
// marker, finds a withdraw, and walks on to the holder below, for which
// it waits: taking the event for a release that ends its walk (skipping
// the marker read, as issue 44 asked of hinted waiters) would make it
// hold beside the holder (docs/architecture.md, "Why a hinted turn needs
// two reads").
func TestWokenBehindAWithdrawnClaimWaitsForTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		var stores []*costStore
		mutex := func() *dsync.Mutex {
			s := newCostStore(mem, rand.New(rand.NewPCG(2, uint64(len(stores)))), false)
			stores = append(stores, s)
			m, err := dsync.NewMutex(newClient(t, s, dsync.ClientWithIdleAge(0)), "k")
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		a, b, w := mutex(), mutex(), mutex()
		waiter := stores[2]
		ctx := context.Background()
		if err := a.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		bctx, cancelB := context.WithCancel(ctx)
		bDone := make(chan error, 1)
		go func() { bDone <- b.LockContext(bctx) }()
		time.Sleep(time.Second) // b's claim is in, waiting for a's
		synctest.Wait()
		wDone := make(chan error, 1)
		go func() { wDone <- w.LockContext(ctx) }()
		time.Sleep(2 * time.Second) // w waits for b's claim, its first looks done
		synctest.Wait()
		observer := newClient(t, mem)
		if q, err := statuspage.NewReader(observer).Queue(ctx, "k"); err != nil || len(q) != 3 {
			t.Fatalf("the queue is %+v (%v), want a's claim, b's and w's", q, err)
		}
		waiter.take()
		cancelB()
		if err := <-bDone; err == nil {
			t.Fatal("b's LockContext held after its context ended")
		}
		time.Sleep(2 * time.Second) // w woke and looked again
		synctest.Wait()
		select {
		case err := <-wDone:
			t.Fatalf("w's LockContext returned %v while a holds: the end of b's withdrawn claim ended its walk", err)
		default:
		}
		if got := waiter.take(); got["Get marker"] == 0 {
			t.Errorf("after b withdrew, w read %v: no end marker", reads(got))
		}
		if err := a.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-wDone; err != nil {
			t.Fatal(err)
		}
		if err := w.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
