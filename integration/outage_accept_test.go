package integration

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader/operator"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Issue 75's acceptance, on the embedded server, scaled to a machine of
// two shared cores: TTL 2 s (issueTTL), every process with an outage grace
// of 30 s that takes back a hold or term lost to a suspension (riding).

// ridingScene is the scene of TestOutageRiddenThrough: keys held each
// with a waiter in another process (pairs), an election of three
// candidates, and a Partition of partitionShardsScene shards over
// members.
type ridingScene struct {
	c       *cluster
	ps      *pairs
	leader  string   // the election's lock key
	shards  []string // the Partition's shard keys
	members int      // the Partition's members, each a process
}

// partitionShardsScene is the Partition's size: issue 75's 16 shards.
const partitionShardsScene = 16

// startRidingScene starts npairs keys over 1 + 1 processes, three
// candidates and members Partition members, and waits until every key is
// held with a waiter queued, a candidate leads, and the shards are owned
// and balanced over the members.
func startRidingScene(t *testing.T, c *cluster, npairs, members int) *ridingScene {
	t.Helper()
	s := &ridingScene{c: c, leader: operator.LockKey("e"), members: members}
	s.ps = startPairs(c, npairs, 1)
	for i := 1; i <= 3; i++ {
		c.start(fmt.Sprintf("e%d", i), func(cfg *worker.Config) {
			cfg.Mode, cfg.Key = worker.ModeElection, "e"
		})
	}
	for i := 1; i <= members; i++ {
		c.start(fmt.Sprintf("m%d", i), func(cfg *worker.Config) {
			cfg.Mode, cfg.Key, cfg.Shards = worker.ModePartition, "part", partitionShardsScene
		})
	}
	for sh := range partitionShardsScene {
		s.shards = append(s.shards, worker.PartitionKey("part", sh))
	}
	s.ps.held(s.leader)
	if !s.awaitShardsSettled(setupBound) {
		t.Fatalf("the shards were not all owned and balanced over the members within %v", setupBound)
	}
	return s
}

// awaitShardsSettled waits up to timeout until every shard has a live
// owner among the members (workers m*), balanced over them, and no shard
// changed hands for a TTL (a handover under way when an outage begins
// would look like a shard moved by it).
func (s *ridingScene) awaitShardsSettled(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	var stableSince time.Time
	var last []*proc
	for time.Now().Before(deadline) {
		owners := s.c.shardOwners(s.shards)
		if !slices.Equal(owners, last) || !balanced(owners, s.members) {
			stableSince, last = time.Now(), owners
		} else if time.Since(stableSince) > s.c.base.TTL {
			return true
		}
		time.Sleep(time.Duration(50+rand.IntN(50)) * time.Millisecond)
	}
	return false
}

// balanced reports whether every shard has an owner, each a Partition
// member, and the members, all of them, own numbers of shards at most
// one apart.
func balanced(owners []*proc, members int) bool {
	owned := make(map[string]int)
	for _, o := range owners {
		if o == nil || !strings.HasPrefix(o.name, "m") {
			return false
		}
		owned[o.name]++
	}
	if len(owned) == 0 {
		return false
	}
	lo, hi := len(owners), 0
	for _, n := range owned {
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi-lo <= 1 && len(owned) == members
}

// holds returns the hold in force of every key of the scene: each pair's
// key, with its waiter queued; the election's; each shard's.
func (s *ridingScene) holds() (map[string]history.Event, error) {
	before, err := s.ps.awaitQueued(s.ps.keys...)
	if err != nil {
		return nil, err
	}
	for _, key := range append([]string{s.leader}, s.shards...) {
		h, err := s.ps.awaitHeld(key)
		if err != nil {
			return nil, err
		}
		before[key] = h
	}
	return before, nil
}

// Issue 75's first acceptance test: an outage of the store of six TTLs
// (12 s at TTL 2 s: the server SIGSTOPped, every client cut off at once),
// with every process riding outages through (an outage grace of 30 s, a
// hold or term lost to a suspension taken back), while npairs keys are
// each held with a waiter queued in another process, three candidates
// elect a leader, and members run a Partition of 16 shards. After
// the store's return, every key's first hold is its holder's of before,
// with the same token (awaitRetaken): every Mutex holder holds again, no
// waiter held in between, the same leader leads with the same token, no
// shard moved. The history is clean (history.Check), with resumes in it.
// The time from the store's return to each key held again is logged. A
// round in which keys were not taken back while a worker was stalled for
// overloadStall of the TTL after the return is played again (at most
// twice the outages asked for).
//
// Long only. The long run is scaled to a machine of two cores shared
// with other work: 10 keys held by one process with their waiters in
// another, and the Partition over two members, seven processes in all,
// three outages. The soak run (DSYNC_SOAK=1) plays the issue's scale:
// 20 keys held by one process with their waiters in another and four
// members, nine processes, over twenty outages (the issue's 20 pairs in
// processes of their own, or even 2 + 2 processes of pairs and four
// members, starved the embedded server at a 2 s TTL: the scene did not
// settle within minutes at a load average of 28):
//
//	DSYNC_LONG=1 go test ./integration -run 'TestOutageRiddenThrough$' -v
//	DSYNC_LONG=1 DSYNC_SOAK=1 go test ./integration -run 'TestOutageRiddenThrough$' -v
func TestOutageRiddenThrough(t *testing.T) {
	longtest.Skip(t)
	npairs, members, outages := 10, 2, 3
	if soak() {
		npairs, members, outages = 20, 4, 20
	}
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	c := newCluster(t, srv.URI(), db, riding(pairConfig(issueTTL)))
	c.hints = false // the store's own signals only
	s := startRidingScene(t, c, npairs, members)
	c.awaitSetupExpired()
	var back []time.Duration
	overloaded := 0
	for n := 0; n < outages; {
		if !s.awaitShardsSettled(setupBound) {
			t.Fatalf("before outage %d: the shards were not owned and balanced within %v", n+1, setupBound)
		}
		before, err := s.holds()
		if err != nil {
			t.Fatalf("before outage %d: %v", n+1, err)
		}
		t0, t1 := c.storeOutage(srv, "outage", outageFor, nil)
		b, missed := c.retaken(before, t0, t1)
		if stalled := c.stalledAfter(t1); len(missed) > 0 && stalled > overloadStall {
			// A resume must be checked within a TTL of the store's
			// return: a process not scheduled for a good part of it
			// cannot. The round tells nothing, and is played again.
			if overloaded++; overloaded > 2*outages {
				t.Fatalf("in %d outages a worker was stalled more than %v in the TTL after the store's return: the machine is too slow for a %v TTL (last: %d keys not taken back: %s)",
					overloaded, overloadStall, issueTTL, len(missed), missed[0])
			}
			t.Logf("outage of %v: %d of %d keys not taken back, and a worker was stalled %v in the TTL after the store's return: the round is played again (%s)",
				ms(t1-t0), len(missed), len(before), stalled.Round(time.Millisecond), missed[0])
			continue
		}
		for _, m := range missed {
			t.Error(m)
		}
		back = append(back, b...)
		n++
		t.Logf("outage %d of %v at TTL %v: %d keys (%d pairs, the leader, %d shards) held again after the store's return: %s",
			n, ms(t1-t0), issueTTL, len(before), npairs, len(s.shards), fmtQuantiles(b))
	}
	r := c.check()
	if r.Resumes == 0 {
		t.Errorf("no resume in the history")
	}
	checkOutagesRecorded(t, db, outages)
	t.Logf("%d outages of %v at TTL %v, grace %v: %d holds and terms taken back with their tokens, %d resumes in the history; store back → held again %s",
		outages, outageFor, issueTTL, outageGrace, len(back), r.Resumes, fmtQuantiles(back))
}

// checkOutagesRecorded: after n outages of the store ridden through, the
// store keeps a record of each resumed session that kept holds (what
// dsync status and the status page list): at least one per outage, each
// with holds kept, suspended before it resumed, and its session and pid.
func checkOutagesRecorded(t *testing.T, db *mongo.Database, n int) {
	t.Helper()
	store, err := dsyncmongo.NewStore(db, dsyncmongo.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, err := store.Roles().Outages.ListOutages(t.Context(), time.Time{})
	if err != nil {
		t.Fatalf("reading the outage records: %v", err)
	}
	holds := 0
	for _, o := range recs {
		holds += o.Holds
		if o.Holds <= 0 || !o.Resumed.After(o.Suspended) || o.Session == "" || o.PID == 0 {
			t.Errorf("outage record %+v: want holds kept, suspended before resumed, its session and pid", o)
		}
	}
	if len(recs) < n {
		t.Errorf("%d outage records after %d outages ridden through; want at least one each", len(recs), n)
	}
	t.Logf("%d outage records (what dsync status lists), %d holds kept in all", len(recs), holds)
}

// overloadStall is how long a worker may be stalled (not scheduled at
// all) in the TTL after the store's return before a round in which holds
// were not taken back is played again: a resume check must end within a
// TTL of the store's return (dsync/internal/queue, doc_outage.go), and a
// process stalled for a quarter of it, on a machine at a load average of
// twenty and more, may not make it. Holds not taken back without such a
// stall fail the test.
const overloadStall = issueTTL / 4

// killedBound is how long after the store's return the waiter of a
// holder killed during an outage must hold: the dead holder's lease is
// credited the outage, and runs out once the store has been up a TTL
// after it (the others' renewals show it), then the waiter's next beat
// and walk take it: about a TTL; on a loaded machine several more.
const killedBound = 5 * issueTTL

// Issue 75's third acceptance test: a holder killed (SIGKILL) during an
// outage of the store is replaced by its waiter within killedBound of
// the store's return, with a larger token, while the holders that lived
// hold again with theirs (awaitRetaken). Three keys, each held by a
// process of its own with a waiter in another, every process with an
// outage grace of 30 s: a replacement the rule left to the grace's end
// would come 30 s after the holder's deadline. The time from the return
// to the replacement is logged.
//
// Long only: three outages of three TTLs, each killing one holder.
//
//	DSYNC_LONG=1 go test ./integration -run 'TestHolderKilledDuringOutage$' -v
func TestHolderKilledDuringOutage(t *testing.T) {
	longtest.Skip(t)
	rounds := 3
	if soak() {
		rounds = 20
	}
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	c := newCluster(t, srv.URI(), db, riding(pairConfig(issueTTL)))
	c.hints = false
	ps := startPairs(c, 3, 3)
	c.awaitSetupExpired()
	var replaced []time.Duration
	for n := range rounds {
		before := ps.queued(ps.keys...)
		key := ps.keys[n%len(ps.keys)]
		victim := before[key]
		p := c.procOf(victim)
		if p == nil {
			t.Fatalf("no live process for the hold of %s by %s (pid %d)", key, victim.Worker, victim.PID)
		}
		t0, t1 := c.storeOutage(srv, "outage", 3*issueTTL, func() {
			time.Sleep(randDuration(0, issueTTL))
			c.kill(p)
		})
		delete(before, key)
		c.awaitRetaken(before, t0, t1)
		nx, _ := c.await(0, retakeBound, "the killed holder's replacement", func(e history.Event) bool {
			return e.Ev == history.EvAcquire && e.Key == key && e.T > t0
		})
		took := time.Duration(nx.T - t1)
		switch {
		case nx.PID == victim.PID || nx.Token <= victim.Token:
			t.Errorf("%s: held by %s (pid %d) with token %d after the outage, killed holder %s (pid %d) token %d",
				key, nx.Worker, nx.PID, nx.Token, victim.Worker, victim.PID, victim.Token)
		case took > killedBound:
			t.Errorf("%s: the killed holder's waiter %s held %v after the store's return, more than %v", key, nx.Worker, ms(nx.T-t1), killedBound)
		}
		replaced = append(replaced, took)
		t.Logf("outage of %v, %s killed in it (holding %s, token %d): %s holds with token %d, %v after the store's return",
			ms(t1-t0), p.name, key, victim.Token, nx.Worker, nx.Token, ms(nx.T-t1))
		c.restart(p) // a waiter behind the new holder
	}
	r := c.check()
	t.Logf("TTL %v, grace %v: a holder killed during an outage replaced after the store's return: %s; %d resumes of the others",
		issueTTL, outageGrace, fmtQuantiles(replaced), r.Resumes)
}
