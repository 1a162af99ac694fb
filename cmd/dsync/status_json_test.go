//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/leader/operator"
	"github.com/go-dsync/dsync/statuspage"
)

// TestStatusJSONIsThePagesSchema: of one store read at one time, dsync
// status --json prints what status.json serves, field for field: each
// lock with its holders and waiters (a Mutex's, an RWMutex's readers, a
// Semaphore's units, a Once done), each election with its leader and
// members, a partition's shards owned and not and its drained member, the revocations with the
// revoked session's claim marked, the stall records, the outages ridden
// through in the last day, and a summary that says what the page's top
// says.
func TestStatusJSONIsThePagesSchema(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := memory.New()
		members := leadertest.NewMemoryMembers()
		client := func() *dsync.Client {
			c, err := dsync.NewClient(s.Process())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := dsync.NewMutex(client(), "jobs")
		must(err)
		must(jobs.LockContext(ctx))
		waiter, err := dsync.NewMutex(client(), "jobs")
		must(err)
		waitCtx, stopWaiting := context.WithCancel(ctx)
		t.Cleanup(stopWaiting)
		go waiter.LockContext(waitCtx)
		for range 2 {
			cfg, err := dsync.NewRWMutex(client(), "cfg")
			must(err)
			must(cfg.RLockContext(ctx))
		}
		sem, err := dsync.NewSemaphore(client(), "encode", 3)
		must(err)
		must(sem.Acquire(ctx, 2))
		once, err := dsync.NewOnce(client(), "migrate")
		must(err)
		must(once.Do(ctx, func(context.Context) error { return nil }))
		for _, name := range []string{"billing", "grid#0", "grid#1"} {
			e, err := leader.NewElection(client(), name, leader.WithMembers(members), leader.WithVersion("v1"), leader.WithValue("at "+name))
			must(err)
			t.Cleanup(func() { e.Close() })
			_, err = e.Campaign(ctx)
			must(err)
			if name == "grid#1" {
				must(e.Resign(ctx)) // a shard nobody owns
			}
		}
		_, err = operator.Drain(ctx, members, "grid", "gone", true, "ops@host", "retired")
		must(err)
		doomed, err := dsync.NewMutex(client(), "doomed")
		must(err)
		must(doomed.LockContext(ctx))
		synctest.Wait() // the waiter's claim and the keys' records are written
		queue, err := statuspage.NewReader(client()).Queue(ctx, "doomed")
		must(err)
		must(s.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: queue[0].Session, By: "ops@host", Reason: "stuck", At: s.ServerTime().Latest}))
		stalledAt := s.ServerTime().Latest
		must(s.Roles().Stalls.RecordStall(ctx, driver.Stall{Key: "dsync:sem/encode", Token: 1, Owner: "o", Session: "s", Nonce: "n", Host: "h", PID: 1,
			Since: stalledAt.Add(-time.Minute), LastProgress: stalledAt.Add(-time.Second), At: stalledAt}))
		must(s.Roles().Stalls.RecordStall(ctx, driver.Stall{Key: "jobs", Token: 2, Session: "s", Nonce: "n2", At: stalledAt.Add(-time.Hour)}))
		// Outages ridden through: two of the last day, one older.
		for i, ago := range []time.Duration{time.Minute, time.Hour, 25 * time.Hour} {
			must(s.Roles().Outages.RecordOutage(ctx, driver.Outage{Session: "s", Host: "h", PID: 1 + i, Suspended: stalledAt.Add(-ago - 12*time.Second),
				Resumed: stalledAt.Add(-ago), Holds: 2 + i, At: stalledAt.Add(-ago)}))
		}

		time.Sleep(1500 * time.Millisecond) // for durations that are not 0
		synctest.Wait()

		// Both read now, as a store's time: nothing moves in between.
		reader, now := client(), time.Now()
		rec := httptest.NewRecorder()
		statuspage.New(statuspage.Config{Client: reader, Members: members, Seen: dsync.DefaultTTL,
			Now: func(context.Context) (time.Time, error) { return now, nil }}).ServeHTTP(rec, httptest.NewRequest("GET", "/status.json", nil))
		var page statuspage.Snapshot
		must(json.Unmarshal(rec.Body.Bytes(), &page))

		var out bytes.Buffer
		r := statuspage.NewReader(reader)
		r.Members, r.Now = members, func() time.Time { return now }
		rs, err := r.Revocations(ctx)
		must(err)
		stalls, err := r.Stalls(ctx)
		must(err)
		sets, err := r.SetRecords(ctx, now.Add(-statuspage.DeadlocksShown))
		must(err)
		outages, err := r.Outages(ctx, now.Add(-statuspage.OutagesShown))
		must(err)
		sink := newJSONSink(&out, rs, stalls, &sets, outages, func(partition string) ([]statuspage.DrainedMember, error) { return r.Drained(ctx, partition) })
		sink.cmds.host = "(none)" // the command pids are the command's own: none here
		listed, err := r.Walk(ctx, statuspage.Selection{}, sink)
		must(err)
		must(sink.done(statusSummary{now: now, Listed: listed}))
		st := parseStatusJSON(t, out.String())
		cli := statuspage.Snapshot{Summary: st.summary, Locks: st.locks, Elections: st.elections, Partitions: st.partitions, Revocations: st.revocations, Stalls: st.stalls,
			SetWaits: nonNil(st.setWaits), Deadlocks: nonNil(st.deadlocks), Outages: nonNil(st.outages)}

		if len(page.Locks) != 5 || len(page.Elections) != 1 || len(page.Partitions) != 1 || len(page.Partitions[0].Shards) != 2 ||
			len(page.Revocations) != 1 || len(page.Stalls) != 2 || len(page.Outages) != 2 || page.Error != "" {
			t.Fatalf("status.json: %+v; want 5 locks, 1 election, a partition of 2 shards, 1 revocation, 2 stall records, 2 outages of the last day", page)
		}
		if o := page.Outages; o[0].PID != 1 || o[1].PID != 2 || o[0].Holds != 2 || o[0].Resumed.Sub(o[0].Suspended) != 12*time.Second {
			t.Errorf("status.json's outages: %+v; want the newest first, each as recorded", o)
		}
		if d := page.Partitions[0].Drained; len(d) != 1 || d[0].ID != "gone" || d[0].By != "ops@host" || d[0].Reason != "retired" || d[0].At.IsZero() || d[0].PID != 0 {
			t.Errorf("status.json's partition drained: %+v; want the member gone, drained by ops@host, not seen", d)
		}
		if d := lockOf(page, "doomed"); d == nil || !d.Holders[0].Revoked {
			t.Errorf("status.json doomed: %+v; want its holder's claim marked revoked", d)
		}
		pageJSON, cliJSON := marshalIndent(t, page), marshalIndent(t, cli)
		if pageJSON != cliJSON {
			t.Errorf("dsync status --json differs from status.json\nstatus.json:\n%s\ndsync status --json, gathered:\n%s\n--json as printed:\n%s", pageJSON, cliJSON, out.String())
		}
	})
}

func lockOf(s statuspage.Snapshot, name string) *statuspage.Lock {
	for i := range s.Locks {
		if s.Locks[i].Name == name {
			return &s.Locks[i]
		}
	}
	return nil
}

func marshalIndent(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// nonNil is s, or an empty slice for nil: a Snapshot's lists are present
// when empty, where status --json prints no line.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
