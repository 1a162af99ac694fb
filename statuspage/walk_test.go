package statuspage_test

import (
	"context"
	"github.com/go-dsync/dsync/leader/operator"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/statuspage"
)

// sink keeps what a Reader hands out, in order.
type sink struct {
	locks     []statuspage.LockState
	elections []statuspage.ElectionState
}

func (s *sink) Lock(l statuspage.LockState) error { s.locks = append(s.locks, l); return nil }
func (s *sink) Election(e statuspage.ElectionState) error {
	s.elections = append(s.elections, e)
	return nil
}

func (s *sink) keys() []string {
	var ks []string
	for _, l := range s.locks {
		ks = append(ks, l.Key)
	}
	for _, e := range s.elections {
		ks = append(ks, operator.LockKey(e.Name))
	}
	slices.Sort(ks)
	return ks
}

func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// store makes, in a store of its own, a held Mutex "jobs" with a waiter,
// a Semaphore "encode" with 2 of 3 units held, an RWMutex "cfg" a reader
// holds, a Once "migrate" that ran to success, and an election "billing"
// with a leader; it returns a Reader of it on a Client of its own, once
// the keys are recorded, and that Client.
func store(t *testing.T, members leader.MemberStore) (*statuspage.Reader, *dsync.Client) {
	ctx := t.Context()
	s := memory.New()
	jobs := must(dsync.NewMutex(newClient(t, s.Process()), "jobs"))(t)
	if err := jobs.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := must(dsync.NewMutex(newClient(t, s.Process()), "jobs"))(t)
	waitCtx, stopWaiting := context.WithCancel(ctx)
	t.Cleanup(stopWaiting)
	go waiter.LockContext(waitCtx)
	sem := must(dsync.NewSemaphore(newClient(t, s.Process()), "encode", 3))(t)
	if err := sem.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	cfg := must(dsync.NewRWMutex(newClient(t, s.Process()), "cfg"))(t)
	if err := cfg.RLockContext(ctx); err != nil {
		t.Fatal(err)
	}
	once := must(dsync.NewOnce(newClient(t, s.Process()), "migrate"))(t)
	if err := once.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	opts := []leader.Option{leader.WithVersion("v1")}
	if members != nil {
		opts = append(opts, leader.WithMembers(members))
	}
	e := must(leader.NewElection(newClient(t, s.Process()), "billing", opts...))(t)
	t.Cleanup(func() { e.Close() })
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	synctest.Wait() // the waiter's claim and the keys' records are written
	now := time.Now()
	c := newClient(t, s.Process())
	r := statuspage.NewReader(c)
	r.Members, r.Now = members, func() time.Time { return now }
	return r, c
}

// Walk hands out every kind as read: its name and kind from its key, its
// holders and waiters, the state each shows, a Once's done record, an
// election's leader with the lease of its term and its members; and
// counts them.
func TestWalkHandsOutEachKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := store(t, leadertest.NewMemoryMembers())
		var out sink
		listed, err := r.Walk(t.Context(), statuspage.Selection{}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if listed.Order != statuspage.OrderBytes || listed.Locks != 4 || listed.Elections != 1 || listed.More || listed.Next != "" {
			t.Errorf("Listed = %+v; want bytes order, 4 locks, 1 election, nothing more", listed)
		}
		type shown struct {
			kind, name, state string
			holders, waiting  int
		}
		want := map[string]shown{
			"jobs":               {statuspage.KindMutex, "jobs", "held", 1, 1},
			"dsync:sem/encode":   {statuspage.KindSemaphore, "encode", "2/3", 1, 0},
			"dsync:rw/cfg":       {statuspage.KindRWMutex, "cfg", "read", 1, 0},
			"dsync:once/migrate": {statuspage.KindOnce, "migrate", "done", 0, 0},
		}
		for _, l := range out.locks {
			got := shown{l.Kind, l.Name, l.State(), len(l.Holders), len(l.Waiting)}
			if w, ok := want[l.Key]; !ok || got != w {
				t.Errorf("lock %q: %+v; want %+v", l.Key, got, w)
			}
			if !l.Now.Equal(r.Now()) {
				t.Errorf("lock %q read at %v; want Reader.Now, %v", l.Key, l.Now, r.Now())
			}
		}
		if len(out.elections) != 1 {
			t.Fatalf("elections %+v; want billing", out.elections)
		}
		e := out.elections[0]
		if e.Name != "billing" || e.Leader == nil || e.Lease == nil || e.Lease.Token != e.Leader.Token ||
			len(e.Members) != 1 || e.Members[0].ID != e.Leader.ID || e.Members[0].Version != "v1" {
			t.Errorf("election %+v; want billing's leader, the lease of its term, and it as the one member", e)
		}
	})
}

// Without a MemberStore an election is read with its leader and lease,
// and no members.
func TestElectionWithoutMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := store(t, nil)
		var out sink
		if _, err := r.Walk(t.Context(), statuspage.Selection{Prefix: operator.LockKey("")}, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.locks) != 0 || len(out.elections) != 1 {
			t.Fatalf("with the elections' prefix: %d locks, elections %+v; want billing only", len(out.locks), out.elections)
		}
		if e := out.elections[0]; e.Leader == nil || e.Lease == nil || len(e.Members) != 0 {
			t.Errorf("election %+v; want a leader and its lease, no members", e)
		}
	})
}

// A Limit reads one page, says that more follow and where the next one
// starts; After reads the rest, and the two pages are every key once.
func TestWalkPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := store(t, nil)
		var first, rest, all sink
		if _, err := r.Walk(t.Context(), statuspage.Selection{}, &all); err != nil {
			t.Fatal(err)
		}
		listed, err := r.Walk(t.Context(), statuspage.Selection{Limit: 2}, &first)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(first.locks) + len(first.elections); n != 2 || !listed.More || listed.Next == "" {
			t.Fatalf("Limit 2: %d handed out, Listed %+v; want 2, more, and where to go on", n, listed)
		}
		listed, err = r.Walk(t.Context(), statuspage.Selection{After: listed.Next, Limit: 10}, &rest)
		if err != nil {
			t.Fatal(err)
		}
		if listed.More {
			t.Errorf("the rest, Limit 10: Listed %+v; want no more", listed)
		}
		got := append(first.keys(), rest.keys()...)
		slices.Sort(got)
		if want := all.keys(); !slices.Equal(got, want) {
			t.Errorf("two pages: %q; want every key once, %q", got, want)
		}
	})
}

// WalkNamed hands out what exists under a name, whatever its kind, the
// shards of the partition of that name, and nothing for a name nothing
// has.
func TestWalkNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, c := store(t, nil)
		ctx := t.Context()
		var out sink
		if _, err := r.WalkNamed(ctx, "encode", &out); err != nil {
			t.Fatal(err)
		}
		if got := out.keys(); !slices.Equal(got, []string{"dsync:sem/encode"}) {
			t.Errorf("Named(encode): %q; want the semaphore", got)
		}
		out = sink{}
		listed, err := r.WalkNamed(ctx, "nothing", &out)
		if err != nil || listed.Locks+listed.Elections != 0 {
			t.Errorf("Named(nothing) = %+v, %v; want nothing", listed, err)
		}
		shard := must(leader.NewElection(c, "part#0"))(t)
		t.Cleanup(func() { shard.Close() })
		if _, err := shard.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		out = sink{}
		if _, err := r.WalkNamed(ctx, "part", &out); err != nil {
			t.Fatal(err)
		}
		if len(out.elections) != 1 || out.elections[0].Name != "part#0" || out.elections[0].Leader == nil {
			t.Errorf("Named(part): %+v; want its shard 0, led", out.elections)
		}
	})
}

// TestStalls: the Reader lists the stall records the store keeps, as
// recorded, and none where there are none.
func TestStalls(t *testing.T) {
	ctx := t.Context()
	store := memory.New()
	r := statuspage.NewReader(newClient(t, store.Process()))
	if got, err := r.Stalls(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Stalls of an empty store = %+v, %v; want none", got, err)
	}
	at := store.ServerTime().Latest
	rec := driver.Stall{Key: "dsync:sem/encode", Token: 7, Owner: "o", Session: "s", Nonce: "n", Host: "h", PID: 3,
		Since: at.Add(-time.Minute), LastProgress: at.Add(-time.Second), At: at}
	if err := store.Roles().Stalls.RecordStall(ctx, rec); err != nil {
		t.Fatal(err)
	}
	want := statuspage.Stall{Key: rec.Key, Kind: statuspage.KindSemaphore, Name: "encode", Token: 7, Owner: "o", Session: "s", Nonce: "n", Host: "h", PID: 3,
		Since: rec.Since, LastProgress: rec.LastProgress, At: at}
	got, err := r.Stalls(ctx)
	if err != nil || len(got) != 1 || got[0] != want {
		t.Errorf("Stalls = %+v, %v; want [%+v]", got, err, want)
	}
}
