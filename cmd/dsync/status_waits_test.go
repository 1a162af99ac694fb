//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/lockset"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestPrintSetWaits: after the table, each lock set's wait: the set, its
// process, what it holds (or that no note says yet), where it waits and
// for whom, and for how long; the store's lack of notes or records said;
// then the deadlocks broken, the recent one marked.
func TestPrintSetWaits(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	waits := []statuspage.SetWait{
		{Set: "s9", Host: "web-2", PID: 811, Name: "acct/3", Kind: "mutex", Token: 12, WaitingMS: 12000, Noted: true,
			Holds: []string{"acct/7", "dsync:rw/cfg"}, Since: now.Add(-time.Minute), HeldBy: []statuspage.SetHolder{{Set: "s7", Host: "web-5", PID: 402, Token: 11}}},
		{Set: "s8", Host: "web-3", PID: 5, Name: "cfg", Kind: "rwmutex", Token: 4, WaitingMS: 300,
			HeldBy: []statuspage.SetHolder{{Host: "h", PID: 1, Token: 2}, {Host: "h", PID: 2, Token: 3}}},
	}
	sets := &statuspage.SetRecords{WaitsKept: false, DeadlocksKept: true, Deadlocks: []statuspage.Deadlock{
		{Victim: "s9", Host: "web-2", PID: 811, At: now.Add(-time.Minute), Cycle: []statuspage.DeadlockEdge{
			{Set: "s9", Name: "acct/3", HeldBy: "s7"}, {Set: "s7", Name: "acct/7", HeldBy: "s9"}}},
		{Victim: "s1", Host: "web-1", PID: 9, At: now.Add(-3 * time.Hour), Cycle: []statuspage.DeadlockEdge{
			{Set: "s1", Name: "a", HeldBy: "s2"}, {Set: "s2", Name: "b", HeldBy: "s1"}}},
	}}
	var out bytes.Buffer
	if err := printSetWaits(&out, waits, sets, now); err != nil {
		t.Fatal(err)
	}
	want := `
lock sets waiting:
  set s9 (web-2 pid 811) holds acct/7, cfg since 2026-11-28T11:59:00Z · waits for acct/3 (mutex, token 12) held by set s7 (web-5 pid 402, token 11), 12s
  set s8 (web-3 pid 5) (no note yet: what it holds is not known) · waits for cfg (rwmutex, token 4) held by (h pid 1, token 2) and (h pid 2, token 3), 300ms
  (the store keeps no wait notes: what a set holds while it waits is not known)

deadlocks broken (last day):
  2026-11-28T11:59:00Z victim s9 (web-2 pid 811): s9 -acct/3-> s7 -acct/7-> s9  (last hour)
  2026-11-28T09:00:00Z victim s1 (web-1 pid 9): s1 -a-> s2 -b-> s1
`
	if out.String() != want {
		t.Errorf("printSetWaits printed\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := printSetWaits(&out, nil, &statuspage.SetRecords{}, now); err != nil || out.Len() != 0 {
		t.Errorf("printSetWaits of none printed %q, %v; want nothing", out.String(), err)
	}
}

// TestStatusShowsSetWaits, on the real server: lock set A holds "k1" and
// B "k2"; B waits for "k1" until it has noted its wait. dsync status
// shows B waiting at k1 for A, holding k2, and --json a setWait record
// saying so. A then waits for "k2": B, the younger, is broken, and dsync
// status lists the deadlock, victim B.
func TestStatusShowsSetWaits(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	e := env(uri)
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(time.Minute))
	defer cancel()
	const d = 500 * time.Millisecond
	hold := func(key string) (*lockset.Set, *dsync.Client, driver.Store) {
		st, err := dsyncmongo.NewStore(mongotest.NewClient(t, uri).Database(db))
		if err != nil {
			t.Fatal(err)
		}
		c, err := dsync.NewClient(st, dsync.ClientWithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); st.Close() })
		s, err := lockset.New(c, []lockset.Member{lockset.Mutex(mustMutex(t, c, key))}, lockset.WithDeadlockTimeout(d))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		return s, c, st
	}
	a, ca, st := hold("k1")
	b, cb, _ := hold("k2")
	doneB := make(chan error, 1)
	go func() { doneB <- b.LockMore(ctx, lockset.Mutex(mustMutex(t, cb, "k1"))) }()
	// Until B's note is out (D after its wait began).
	for {
		ws, err := st.Roles().Waits.ListWaits(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("B noted no wait")
		case <-time.After(50 * time.Millisecond):
		}
	}

	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	_, tail, ok := strings.Cut(r.stdout, "\nlock sets waiting:\n")
	lines := readLines(tail)
	if r.code != 0 || !ok || len(lines) < 1 || !strings.Contains(lines[0], " holds k2 since ") ||
		!strings.Contains(lines[0], " · waits for k1 (mutex, token ") || !strings.Contains(lines[0], " held by set ") {
		t.Fatalf("dsync status: exit %d; want B waiting at k1 for A's set, holding k2:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	sj := parseStatusJSON(t, r.stdout)
	if len(sj.setWaits) != 1 || sj.setWaits[0].Name != "k1" || !sj.setWaits[0].Noted || len(sj.setWaits[0].Holds) != 1 ||
		sj.setWaits[0].Holds[0] != "k2" || len(sj.setWaits[0].HeldBy) != 1 || sj.setWaits[0].HeldBy[0].Token != a.Tokens()[0] ||
		sj.summary.NoWaitNotes || sj.summary.NoDeadlockRecords {
		t.Errorf("dsync status --json: set waits %+v, summary %+v; want B's wait at k1 for A (token %d), holding k2",
			sj.setWaits, sj.summary, a.Tokens()[0])
	}

	doneA := make(chan error, 1)
	go func() { doneA <- a.LockMore(ctx, lockset.Mutex(mustMutex(t, ca, "k2"))) }()
	if err := <-doneB; !errors.Is(err, lockset.ErrDeadlock) {
		t.Fatalf("B's LockMore = %v; want ErrDeadlock", err)
	}
	if err := <-doneA; err != nil {
		t.Fatalf("A's LockMore = %v", err)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	_, tail, ok = strings.Cut(r.stdout, "\ndeadlocks broken (last day):\n")
	lines = readLines(tail)
	if r.code != 0 || !ok || len(lines) != 1 || !strings.Contains(lines[0], " -k1-> ") || !strings.Contains(lines[0], " -k2-> ") ||
		!strings.HasSuffix(lines[0], "(last hour)") || strings.Contains(r.stdout, "lock sets waiting:") {
		t.Errorf("dsync status: exit %d; want one deadlock broken, B -k1-> A -k2-> B, and no set waiting:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if err := a.UnlockContext(ctx); err != nil {
		t.Error(err)
	}
}

func mustMutex(t *testing.T, c *dsync.Client, key string) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
