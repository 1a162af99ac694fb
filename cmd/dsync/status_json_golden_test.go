//go:build unix

package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/statuspage"
)

// TestStatusJSONGolden: dsync status --json prints, byte for byte, the
// lines below for the locks, elections, revocations and stall records
// read here. A
// change to a field's name, type or place in the schema (package
// statuspage), or to how it is filled in, fails it: scripts and
// dashboards read these lines. Each kind of lock, a claim revoked, a
// command found on this host, a leader with and without a lease, a
// partition's shards owned and not with its drained members (one seen,
// one not), stall records with and without
// their holder's times, and a summary with every field are in it.
func TestStatusJSONGolden(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 28, 12, 0, s, 0, time.UTC) }
	now := at(30)
	claim := func(token uint64, host string, pid int, session string, queued, expires int) statuspage.ClaimInfo {
		return statuspage.ClaimInfo{Token: token, Owner: "owner-" + session, Session: session, Host: host, PID: pid,
			QueuedAt: at(queued), ExpiresAt: at(expires), Mode: statuspage.ModeExclusive, Holds: true}
	}
	jobs := statuspage.LockState{Key: "jobs", Kind: statuspage.KindMutex, Name: "jobs", Now: now,
		Holders: []statuspage.ClaimInfo{claim(7, "here", 100, "s1", 10, 45)}}
	waiter := claim(8, "there", 200, "s2", 20, 25) // its lease ends before now
	waiter.Holds = false
	jobs.Waiting = []statuspage.ClaimInfo{waiter}
	sem := claim(3, "there", 201, "s3", 29, 40)
	sem.QueuedAt = sem.QueuedAt.Add(1500 * time.Microsecond) // 998.5ms before now: 998
	sem.Mode, sem.Weight, sem.Limit = statuspage.ModeWeighted, 2, 3
	cfg1, cfg2 := claim(4, "here", 102, "s4", 1, 40), claim(5, "there", 202, "s5", 2, 40)
	cfg1.Mode, cfg2.Mode = statuspage.ModeShared, statuspage.ModeShared
	locks := []statuspage.LockState{jobs,
		{Key: "dsync:rw/cfg", Kind: statuspage.KindRWMutex, Name: "cfg", Now: now, Holders: []statuspage.ClaimInfo{cfg1, cfg2}},
		{Key: "dsync:sem/encode", Kind: statuspage.KindSemaphore, Name: "encode", Now: now, Holders: []statuspage.ClaimInfo{sem}},
		{Key: "dsync:once/migrate", Kind: statuspage.KindOnce, Name: "migrate", Now: now, Done: true},
		{Key: "dsync:team/free", Kind: statuspage.KindMutex, Name: "dsync:team/free", Now: now},
	}
	lead := func(id, host string, pid int, token uint64, since int) *leader.Info {
		return &leader.Info{ID: id, Host: host, PID: pid, Version: "v1", Since: at(since), Token: token, Value: "at " + id, Rev: 2}
	}
	lease := func(c statuspage.ClaimInfo) *statuspage.ClaimInfo { return &c }
	elections := []statuspage.ElectionState{
		{Name: "billing", Now: now, Leader: lead("c1", "here", 100, 9, 5), Lease: lease(claim(9, "here", 100, "s1", 5, 45)),
			Members: []leader.Member{
				{ID: "c1", Host: "here", PID: 100, Version: "v1", LastSeen: at(28), Value: "at c1", Term: 9},
				{ID: "c2", Host: "there", PID: 203, Version: "v0", Priority: 5, LastSeen: at(29)},
			}},
		{Name: "grid#1", Now: now},                                        // a shard nobody owns
		{Name: "solo", Now: now, Leader: lead("c3", "there", 204, 2, 12)}, // its term ended as it was read
		{Name: "grid#0", Now: now, Leader: lead("c4", "here", 102, 11, 3), Lease: lease(claim(11, "here", 102, "s4", 3, 31))},
	}
	revocations := []statuspage.Revocation{
		{Session: "s9", By: "ops@a", Reason: "old", At: at(1)},
		{Session: "s2", By: "ops@b", Reason: "stuck", At: at(20)},
	}

	stalls := []statuspage.Stall{
		{Key: "jobs", Token: 6, Owner: "owner-s7", Session: "s7", Nonce: "n7", Host: "there", PID: 207, At: at(2)},
		{Key: "dsync:sem/encode", Token: 2, Owner: "owner-s8", Session: "s8", Nonce: "n8", Host: "here", PID: 108,
			Since: at(11), LastProgress: at(15), At: at(25)},
	}

	var out bytes.Buffer
	drained := func(partition string) ([]statuspage.DrainedMember, error) {
		if partition != "grid" {
			t.Errorf("drained members of %q read; want only grid's", partition)
			return nil, nil
		}
		return []statuspage.DrainedMember{
			{ID: "m1", Host: "here", PID: 105, By: "ops@a", Reason: "disk", At: at(6)},
			{ID: "m2", By: "ops@b", At: at(7)}, // no status seen
		}, nil
	}
	outages := []statuspage.Outage{
		{Session: "s1", Host: "here", PID: 100, Suspended: at(3), Resumed: at(15), Holds: 2, At: at(16)},
		{Session: "s5", Host: "there", PID: 202, Suspended: at(3), Resumed: at(14), Holds: 1, At: at(14)},
	}
	sink := newJSONSink(&out, revocations, stalls, nil, outages, drained)
	sink.cmds = commandFinder{host: "here", children: map[int]int{100: 1100, 102: 1102}, read: time.Now().Add(time.Hour)}
	for _, l := range locks {
		if err := sink.Lock(l); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range elections {
		if err := sink.Election(e); err != nil {
			t.Fatal(err)
		}
	}
	sum := statusSummary{now: now, within: 1200 * time.Microsecond, sel: selection{prefix: "j", after: "a"},
		Listed:   statuspage.Listed{Order: statuspage.OrderBytes, Locks: 5, Elections: 4, More: true, Next: "solo"},
		database: "app", collection: "locks", elsewhere: []string{"other"}}
	if err := sink.done(sum); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != statusJSONGolden {
		t.Errorf("dsync status --json printed\n%s\nwant\n%s", got, statusJSONGolden)
	}
}

const statusJSONGolden = `{"lock":{"key":"jobs","kind":"mutex","name":"jobs","state":"held","holders":[{"token":7,"owner":"owner-s1","host":"here","pid":100,"commandPid":1100,"mode":"exclusive","queuedAt":"2026-11-28T12:00:10Z","expiresAt":"2026-11-28T12:00:45Z","heldForMs":20000,"expiresInMs":15000,"session":"s1"}],"waiting":[{"token":8,"owner":"owner-s2","host":"there","pid":200,"mode":"exclusive","queuedAt":"2026-11-28T12:00:20Z","expiresAt":"2026-11-28T12:00:25Z","heldForMs":10000,"expiresInMs":0,"session":"s2","revoked":true}]}}
{"lock":{"key":"dsync:rw/cfg","kind":"rwmutex","name":"cfg","state":"read","holders":[{"token":4,"owner":"owner-s4","host":"here","pid":102,"commandPid":1102,"mode":"shared","queuedAt":"2026-11-28T12:00:01Z","expiresAt":"2026-11-28T12:00:40Z","heldForMs":29000,"expiresInMs":10000,"session":"s4"},{"token":5,"owner":"owner-s5","host":"there","pid":202,"mode":"shared","queuedAt":"2026-11-28T12:00:02Z","expiresAt":"2026-11-28T12:00:40Z","heldForMs":28000,"expiresInMs":10000,"session":"s5"}],"waiting":[]}}
{"lock":{"key":"dsync:sem/encode","kind":"semaphore","name":"encode","state":"2/3","holders":[{"token":3,"owner":"owner-s3","host":"there","pid":201,"mode":"weighted","weight":2,"limit":3,"queuedAt":"2026-11-28T12:00:29.0015Z","expiresAt":"2026-11-28T12:00:40Z","heldForMs":998,"expiresInMs":10000,"session":"s3"}],"waiting":[]}}
{"lock":{"key":"dsync:once/migrate","kind":"once","name":"migrate","state":"done","holders":[],"waiting":[]}}
{"lock":{"key":"dsync:team/free","kind":"mutex","name":"dsync:team/free","state":"free","holders":[],"waiting":[]}}
{"election":{"name":"billing","key":"dsync:election/billing","leader":{"id":"c1","host":"here","pid":100,"commandPid":1100,"version":"v1","value":"at c1","term":9,"since":"2026-11-28T12:00:05Z","heldForMs":25000,"expiresAt":"2026-11-28T12:00:45Z","expiresInMs":15000},"members":[{"id":"c1","host":"here","pid":100,"version":"v1","priority":0,"leader":true,"lastSeen":"2026-11-28T12:00:28Z","lastSeenAgoMs":2000},{"id":"c2","host":"there","pid":203,"version":"v0","priority":5,"leader":false,"lastSeen":"2026-11-28T12:00:29Z","lastSeenAgoMs":1000}]}}
{"election":{"name":"solo","key":"dsync:election/solo","leader":{"id":"c3","host":"there","pid":204,"version":"v1","value":"at c3","term":2,"since":"2026-11-28T12:00:12Z","heldForMs":18000,"expiresInMs":0},"members":[]}}
{"partition":{"name":"grid","shards":[{"shard":0,"election":"grid#0","key":"dsync:election/grid#0","owner":{"id":"c4","host":"here","pid":102,"commandPid":1102,"version":"v1","value":"at c4","term":11,"since":"2026-11-28T12:00:03Z","heldForMs":27000,"expiresAt":"2026-11-28T12:00:31Z","expiresInMs":1000}},{"shard":1,"election":"grid#1","key":"dsync:election/grid#1","owner":null}],"drained":[{"id":"m1","host":"here","pid":105,"by":"ops@a","reason":"disk","at":"2026-11-28T12:00:06Z"},{"id":"m2","by":"ops@b","reason":"","at":"2026-11-28T12:00:07Z"}]}}
{"revocation":{"session":"s2","by":"ops@b","reason":"stuck","at":"2026-11-28T12:00:20Z"}}
{"revocation":{"session":"s9","by":"ops@a","reason":"old","at":"2026-11-28T12:00:01Z"}}
{"stall":{"key":"dsync:sem/encode","kind":"semaphore","name":"encode","token":2,"owner":"owner-s8","host":"here","pid":108,"session":"s8","nonce":"n8","since":"2026-11-28T12:00:11Z","lastProgress":"2026-11-28T12:00:15Z","at":"2026-11-28T12:00:25Z"}}
{"stall":{"key":"jobs","kind":"mutex","name":"jobs","token":6,"owner":"owner-s7","host":"there","pid":207,"session":"s7","nonce":"n7","at":"2026-11-28T12:00:02Z"}}
{"outage":{"session":"s1","host":"here","pid":100,"suspended":"2026-11-28T12:00:03Z","resumed":"2026-11-28T12:00:15Z","holds":2,"at":"2026-11-28T12:00:16Z"}}
{"outage":{"session":"s5","host":"there","pid":202,"suspended":"2026-11-28T12:00:03Z","resumed":"2026-11-28T12:00:14Z","holds":1,"at":"2026-11-28T12:00:14Z"}}
{"summary":{"now":"2026-11-28T12:00:30Z","clock":"store","uncertaintyMs":2,"namespace":"","prefix":"j","after":"a","order":"bytes","more":true,"next":"solo","database":"app","collection":"locks","elsewhere":["other"]}}
`
