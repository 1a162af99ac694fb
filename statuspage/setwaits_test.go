package statuspage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
	"github.com/go-dsync/dsync/statuspage"
)

// deadlockTimeout is the lock sets' of these tests.
const deadlockTimeout = time.Second

// setOf returns a Set of the Mutex of key on a Client of its own over
// store, with deadlock detection, held; and that Client.
func setOf(t *testing.T, store driver.Store, key string) (*lockset.Set, *dsync.Client) {
	t.Helper()
	c := newClientOn(t, store)
	s, err := lockset.New(c, []lockset.Member{lockset.Mutex(newMutex(t, c, key))}, lockset.WithDeadlockTimeout(deadlockTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// setID is the identity of s, held: the Waiter of its claim of key.
func setID(t *testing.T, store driver.Store, s *lockset.Set, key string) string {
	t.Helper()
	doc, found, err := store.Get(context.Background(), driver.ClaimID(key, s.Tokens()[0]))
	if err != nil || !found || doc.Waiter == "" {
		t.Fatalf("the claim of %q: %+v, %v, %v", key, doc, found, err)
	}
	return doc.Waiter
}

// lockStates reads every key of c's store.
func lockStates(t *testing.T, c *dsync.Client) map[string]statuspage.LockState {
	t.Helper()
	sink := &collect{locks: map[string]statuspage.LockState{}}
	if _, err := statuspage.NewReader(c).Walk(context.Background(), statuspage.Selection{}, sink); err != nil {
		t.Fatal(err)
	}
	return sink.locks
}

type collect struct {
	locks map[string]statuspage.LockState
}

func (c *collect) Lock(l statuspage.LockState) error {
	c.locks[l.Key] = l
	return nil
}
func (c *collect) Election(statuspage.ElectionState) error { return nil }

// TestSetWaitsAndDeadlocks: A holds "k1" and B "k2", each a lock set. B
// waits for "k1": once it has noted its wait (D), the reader shows B
// waiting at "k1" for A's claim, holding "k2", and the claims name their
// sets. A then waits for "k2", closing a cycle that B, the younger,
// breaks: the reader lists that deadlock, victim B, and its two waits;
// the page's status.json shows the same.
func TestSetWaitsAndDeadlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := memory.New()
		a, ca := setOf(t, store, "k1")
		time.Sleep(time.Millisecond) // B is younger
		b, cb := setOf(t, store, "k2")
		aID, bID := setID(t, store, a, "k1"), setID(t, store, b, "k2")
		doneB := make(chan error, 1)
		go func() { doneB <- b.LockMore(ctx, lockset.Mutex(newMutex(t, cb, "k1"))) }()
		time.Sleep(deadlockTimeout + deadlockTimeout/2) // B's note is out
		synctest.Wait()

		rc := newClientOn(t, store)
		sets, err := statuspage.NewReader(rc).SetRecords(ctx, time.Time{})
		if err != nil || !sets.WaitsKept || !sets.DeadlocksKept || len(sets.Deadlocks) != 0 {
			t.Fatalf("SetRecords = %+v, %v; want notes and records kept, no deadlock", sets, err)
		}
		k1 := lockStates(t, rc)["k1"]
		if len(k1.Holders) != 1 || k1.Holders[0].Set != aID || len(k1.Waiting) != 1 || k1.Waiting[0].Set != bID {
			t.Fatalf("k1: holders %+v, waiting %+v; want A's claim holding, B's waiting, each naming its set", k1.Holders, k1.Waiting)
		}
		ws := sets.WaitsOf(k1)
		if len(ws) != 1 {
			t.Fatalf("WaitsOf(k1) = %+v; want B's wait", ws)
		}
		w := ws[0]
		if w.Set != bID || w.Key != "k1" || w.Token != k1.Waiting[0].Token || !w.Noted || len(w.Holds) != 1 || w.Holds[0] != "k2" ||
			len(w.HeldBy) != 1 || w.HeldBy[0].Set != aID || w.HeldBy[0].Token != a.Tokens()[0] || w.WaitingMS < deadlockTimeout.Milliseconds() {
			t.Errorf("B's wait: %+v; want B at k1 for A's claim (token %d), noted, holding k2, for at least D", w, a.Tokens()[0])
		}
		if ws := sets.WaitsOf(lockStates(t, rc)["k2"]); len(ws) != 0 {
			t.Errorf("WaitsOf(k2) = %+v; want none: nobody waits there", ws)
		}

		doneA := make(chan error, 1)
		go func() { doneA <- a.LockMore(ctx, lockset.Mutex(newMutex(t, ca, "k2"))) }()
		if err := <-doneB; !errors.Is(err, lockset.ErrDeadlock) {
			t.Fatalf("B's LockMore = %v; want ErrDeadlock", err)
		}
		if err := <-doneA; err != nil {
			t.Fatalf("A's LockMore = %v", err)
		}
		synctest.Wait()
		sets, err = statuspage.NewReader(rc).SetRecords(ctx, time.Time{})
		if err != nil || len(sets.Deadlocks) != 1 {
			t.Fatalf("SetRecords = %+v, %v; want one deadlock", sets, err)
		}
		dl := sets.Deadlocks[0]
		if dl.Victim != bID || dl.PID == 0 || dl.At.IsZero() || len(dl.Cycle) != 2 ||
			dl.Cycle[0].Set != bID || dl.Cycle[0].Name != "k1" || dl.Cycle[0].HeldBy != aID || dl.Cycle[0].Kind != "mutex" ||
			dl.Cycle[1].Set != aID || dl.Cycle[1].Name != "k2" || dl.Cycle[1].HeldBy != bID {
			t.Errorf("the deadlock: %+v; want victim B, B -k1-> A -k2-> B", dl)
		}

		rec := httptest.NewRecorder()
		statuspage.New(statuspage.Config{Client: rc}).ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
		var page statuspage.Snapshot
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Deadlocks) != 1 || page.Deadlocks[0].Victim != bID || len(page.SetWaits) != 0 || page.NoWaitNotes || page.NoDeadlockRecords {
			t.Errorf("status.json: deadlocks %+v, set waits %+v, noWaitNotes %v, noDeadlockRecords %v; want B's deadlock, no wait (A holds both)",
				page.Deadlocks, page.SetWaits, page.NoWaitNotes, page.NoDeadlockRecords)
		}
		a.Unlock()
	})
}

// noSetRecords is a store that keeps no notes or deadlock records.
type noSetRecords struct{ *memory.Store }

func (s noSetRecords) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Waits, r.Deadlocks = nil, nil
	return r
}

// TestSetWaitsWithoutNotes: on a store that keeps no notes or deadlock
// records, a set's wait still names whom it waits for, but not what it
// holds (not noted), and the reader and the page say that the store
// keeps neither.
func TestSetWaitsWithoutNotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := noSetRecords{memory.New()}
		c := newClientOn(t, store)
		single := newMutex(t, c, "k2")
		if err := single.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := lockset.New(c, []lockset.Member{lockset.Mutex(newMutex(t, c, "k1")), lockset.Mutex(newMutex(t, c, "k2"))})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.LockContext(wctx) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()

		sets, err := statuspage.NewReader(c).SetRecords(ctx, time.Time{})
		if err != nil || sets.WaitsKept || sets.DeadlocksKept {
			t.Fatalf("SetRecords = %+v, %v; want neither kept", sets, err)
		}
		ws := sets.WaitsOf(lockStates(t, c)["k2"])
		if len(ws) != 1 || ws[0].Noted || len(ws[0].Holds) != 0 || len(ws[0].HeldBy) != 1 || ws[0].HeldBy[0].Set != "" || ws[0].HeldBy[0].Token != single.Token() {
			t.Errorf("the set's wait at k2: %+v; want it, not noted, waiting for the single lock (token %d, no set)", ws, single.Token())
		}
		rec := httptest.NewRecorder()
		statuspage.New(statuspage.Config{Client: c}).ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
		var page statuspage.Snapshot
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		if !page.NoWaitNotes || !page.NoDeadlockRecords || len(page.SetWaits) != 1 || page.SetWaits[0].Noted {
			t.Errorf("status.json: noWaitNotes %v, noDeadlockRecords %v, set waits %+v; want both said, the wait not noted",
				page.NoWaitNotes, page.NoDeadlockRecords, page.SetWaits)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the set's LockContext = %v; want its context's end", err)
		}
		single.Unlock()
	})
}

// TestWaitsOfEdges: a set's waiting claim waits for the holders it
// conflicts with (a reader for no reader), and for every holder behind
// another waiting claim; claims of no set, and expired ones, make no
// wait.
func TestWaitsOfEdges(t *testing.T) {
	ex, sh := statuspage.ModeExclusive, statuspage.ModeShared
	claim := func(set string, tok uint64, m statuspage.Mode) statuspage.ClaimInfo {
		return statuspage.ClaimInfo{Set: set, Token: tok, Mode: m, Host: "h", PID: int(tok)}
	}
	for _, c := range []struct {
		name             string
		holders, waiting []statuspage.ClaimInfo
		want             map[string][]uint64 // waiting set -> tokens it waits for
	}{
		{"a writer waits for readers", []statuspage.ClaimInfo{claim("r1", 1, sh), claim("", 2, sh)}, []statuspage.ClaimInfo{claim("w", 3, ex)},
			map[string][]uint64{"w": {1, 2}}},
		{"a reader waits for the writer", []statuspage.ClaimInfo{claim("", 1, ex)}, []statuspage.ClaimInfo{claim("r", 2, sh)},
			map[string][]uint64{"r": {1}}},
		{"behind a waiting writer, a reader waits for every holder", []statuspage.ClaimInfo{claim("a", 1, sh)},
			[]statuspage.ClaimInfo{claim("", 2, ex), claim("r", 3, sh)}, map[string][]uint64{"r": {1}}},
		{"single waiters are no set's", []statuspage.ClaimInfo{claim("a", 1, ex)}, []statuspage.ClaimInfo{claim("", 2, ex)},
			map[string][]uint64{}},
	} {
		l := statuspage.LockState{Key: "k", Kind: "rwmutex", Name: "k", Holders: c.holders, Waiting: c.waiting,
			Expired: []statuspage.ClaimInfo{claim("gone", 9, ex)}}
		got := map[string][]uint64{}
		for _, w := range (*statuspage.SetRecords)(nil).WaitsOf(l) {
			for _, h := range w.HeldBy {
				got[w.Set] = append(got[w.Set], h.Token)
			}
			if w.Noted || len(w.Holds) != 0 {
				t.Errorf("%s: %+v is noted without notes", c.name, w)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: waits %v; want %v", c.name, got, c.want)
		}
	}
}
