package dsync_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// lockers are the blocking Lock and Unlock of a Mutex, an RWMutex (write
// and read) and a Semaphore on b, keyed as tryers keys them.
func lockers(t *testing.T, b *dsync.Client) []struct {
	name         string
	lock, unlock func()
} {
	t.Helper()
	m := newMutex(t, b, "mutex")
	rw, err := dsync.NewRWMutex(b, "rw", quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := dsync.NewRWMutex(b, "rw-read", quiet)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dsync.NewSemaphore(b, "sem", 2, quiet)
	if err != nil {
		t.Fatal(err)
	}
	acquire := func() {
		if err := s.Acquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	return []struct {
		name         string
		lock, unlock func()
	}{
		{"Mutex", m.Lock, m.Unlock},
		{"RWMutex", rw.Lock, rw.Unlock},
		{"RWMutex (read)", r.RLock, r.RUnlock},
		{"Semaphore", acquire, func() { s.Release(1) }},
	}
}

// A try of a free key holds, even when the process that tries held the
// key before and another process has held and released it since: the
// try's insert for the epoch after its own release loses to the other
// process's claim, which has ended, and ErrHeld says only that the key
// is held or waited for.
func TestTryAfterAnotherProcessTookTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoProcesses(t)
		ctx := context.Background()
		al, bl := lockers(t, a.Client), lockers(t, b.Client)
		as := tryers(t, a.Client, quiet)
		for i, tr := range as {
			al[i].lock()
			al[i].unlock()
			bl[i].lock()
			bl[i].unlock()
			if err := tr.try(ctx); err != nil {
				t.Errorf("%s of a free key, after %s was held here and then by another process: %v", tr.name, al[i].name, err)
				continue
			}
			tr.undo()
		}
	})
}

// Two processes that take turns with a try each hold at every turn: the
// key is free at each.
func TestTryTakingTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoProcesses(t)
		ctx := context.Background()
		procs := [][]tryer{tryers(t, a.Client, quiet), tryers(t, b.Client, quiet)}
		for i := range procs[0] {
			failed := 0
			for turn := range 20 {
				tr := procs[turn%2][i]
				if err := tr.try(ctx); err != nil {
					failed++
					t.Logf("%s, turn %d: %v", tr.name, turn, err)
					continue
				}
				tr.undo()
			}
			if failed > 0 {
				t.Errorf("%s: %d of 20 tries of a free key failed, taking turns between two processes", procs[0][i].name, failed)
			}
		}
	})
}

// An uncontended try costs what it did before a lost race was read again:
// two requests a cycle (the insert, which proves the key free by this
// process's own release below it, and the release) when this process
// held the key last, and the same when it takes turns with no one.
func TestTryUncontendedCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newCostStore(memory.New(), rand.New(rand.NewPCG(1, 1)), true)
		c := newClient(t, s)
		ctx := context.Background()
		for _, tr := range tryers(t, c, quiet) {
			if err := tr.try(ctx); err != nil { // opens the session and the key's queue
				t.Fatalf("%s: %v", tr.name, err)
			}
			tr.undo()
			synctest.Wait()
			s.take()
			const cycles = 10
			for range cycles {
				if err := tr.try(ctx); err != nil {
					t.Fatalf("%s: %v", tr.name, err)
				}
				tr.undo()
			}
			synctest.Wait()
			n := s.take()
			total := 0
			for _, k := range n {
				total += k
			}
			t.Logf("%s: %v", tr.name, n)
			if total != 2*cycles {
				t.Errorf("%s: %d requests in %d uncontended cycles (%v); want 2 a cycle", tr.name, total, cycles, n)
			}
		}
	})
}
