package dsyncmongo

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/lockset"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// The acceptance sizes of the deadlock tests (issue 77: 200 cycles, 10,000
// waits that make none) are runs by hand, given by these flags: under the
// race detector, beside the package's other tests, they outlasted CI's
// 40 minutes; the long form (DSYNC_LONG=1) plays a tenth of them, the
// short one a few.
var (
	cycleTrialsFlag = flag.Int("lockset.trials", 0, "TestLockSetDeadlockTrials: cycles to break (default 2; 20 with DSYNC_LONG=1)")
	fpWaitsFlag     = flag.Int("lockset.waits", 0, "TestLockSetNoFalseDeadlock: waits that make no cycle (default 6; 1,000 with DSYNC_LONG=1)")
)

// sized is what a test plays: the flag's count if given, else long under
// DSYNC_LONG=1, else short.
func sized(flagged, short, long int) int {
	switch {
	case flagged > 0:
		return flagged
	case longtest.Enabled():
		return long
	default:
		return short
	}
}

// cycleD is the deadlock timeout of the trials of cycles and of the
// waits that make none.
const cycleD = 500 * time.Millisecond

// breakSlack is what a break may take beyond lockset's bound of 2·D
// before the test fails: the bound adds the store time of a note and of
// one check's reads, and on a machine busy at several times its cores
// those take seconds.
const breakSlack = dsync.DefaultTTL

// TestLockSetDeadlockTrials: two processes (each its own Client and
// connection) lock in opposite orders, trial after trial: each takes one
// key in a Set, then grows it (LockMore) by the key the other holds,
// the younger Set first in half the trials, the older in the others,
// the second LockMore a random time (under D/2) after the first. Every
// cycle is broken within 2·D of its closing (doc.go's bound; the store's
// times on top, with breakSlack): the victim's LockMore returns a
// *DeadlockError naming both edges, its Set unlocked, and the other's
// LockMore returns holding both keys. The victim is the Set whose notes
// say it is the youngest, the greatest (Since, identity) of the cycle,
// and the store keeps one record per trial. The time from the second
// LockMore's call to the victim's return is logged (p50, p99, max).
// 2 trials in the short form, 20 in the long one (DSYNC_LONG=1), and
// -lockset.trials=N plays N (the acceptance run: 200).
//
// Not parallel: the times it logs are the detection's own, not those of
// a server the package's other tests keep busy (beside
// TestLockSetNoFalseDeadlock's waits, breaks took several times as long).
func TestLockSetDeadlockTrials(t *testing.T) {
	trials := sized(*cycleTrialsFlag, 2, 20)
	t.Logf("%d trials (-lockset.trials=200 for the acceptance run)", trials)
	ctx := testCtx(t, time.Duration(trials)*(2*cycleD+breakSlack)/4+time.Minute)
	ps := newProcs(t, 2)
	// keys[p][k]: process p's Mutex of key k, kept from trial to trial.
	var keys [2][2]*dsync.Mutex
	for p := range keys {
		for k := range keys[p] {
			keys[p][k] = newMutex(t, ps[p].b.Client, fmt.Sprintf("cycle%d", k))
		}
	}
	rng := rand.New(rand.NewPCG(77, 1))
	start := time.Now()
	var took []time.Duration
	secondVictim := 0 // trials whose victim locked second
	for i := range trials {
		tr := cycleTrial{older: i % 2, youngerFirst: i/2%2 == 0, gap: time.Duration(rng.Int64N(int64(cycleD / 2)))}
		d, victim := tr.run(ctx, t, ps, keys)
		took = append(took, d)
		if victim == 1-tr.older {
			secondVictim++
		}
	}
	over := 0
	for _, d := range took {
		if d > 2*cycleD {
			over++
		}
	}
	slices.Sort(took)
	t.Logf("%d cycles broken, from the second LockMore's call to the victim's return: p50 %v, p99 %v, max %v (D = %v, 2·D = %v); over 2·D: %d; the victim locked its first key second in %d",
		len(took), pctile(took, 50), pctile(took, 99), took[len(took)-1], cycleD, 2*cycleD, over, secondVictim)
	checkVictims(ctx, t, ps[0].b.s.Roles(), start, trials)
}

// cycleTrial is one trial of TestLockSetDeadlockTrials: the process
// older locks its key first (key 0; the other key 1); the younger grows
// its Set first if youngerFirst, and the other gap later.
type cycleTrial struct {
	older        int
	youngerFirst bool
	gap          time.Duration
}

// moreOutcome is what a LockMore of a trial returned, and when.
type moreOutcome struct {
	proc int
	err  error
	at   time.Time
}

// run plays the trial and returns the time from the second LockMore's
// call to the victim's return, and the victim's process.
func (tr cycleTrial) run(ctx context.Context, t *testing.T, ps []*proc, keys [2][2]*dsync.Mutex) (time.Duration, int) {
	t.Helper()
	younger := 1 - tr.older
	sets := [2]*lockset.Set{}
	for _, p := range []int{tr.older, younger} {
		k := 0
		if p == younger {
			k = 1
			time.Sleep(10 * time.Millisecond) // its Since is later
		}
		s, err := lockset.New(ps[p].b.Client, []lockset.Member{lockset.Mutex(keys[p][k])}, lockset.WithDeadlockTimeout(cycleD))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		sets[p] = s
	}
	done := make(chan moreOutcome, 2)
	more := func(p int) {
		other := 1 // the key p's Set does not hold
		if p == younger {
			other = 0
		}
		go func() {
			err := sets[p].LockMore(ctx, lockset.Mutex(keys[p][other]))
			done <- moreOutcome{p, err, time.Now()}
		}()
	}
	first, second := tr.older, younger
	if tr.youngerFirst {
		first, second = younger, tr.older
	}
	more(first)
	time.Sleep(tr.gap)
	closed := time.Now()
	more(second)
	var victim, winner moreOutcome
	for range 2 {
		select {
		case o := <-done:
			if errors.Is(o.err, lockset.ErrDeadlock) {
				victim = o
			} else {
				winner = o
			}
		case <-time.After(2*cycleD + breakSlack):
			t.Fatalf("%+v: a LockMore still waits 2·D + %v after the cycle closed", tr, breakSlack)
		}
	}
	var de *lockset.DeadlockError
	if !errors.As(victim.err, &de) || len(de.Cycle) != 2 || winner.err != nil {
		t.Fatalf("%+v: LockMores returned %v (process %d) and %v (process %d); want one *DeadlockError of two edges and one nil",
			tr, victim.err, victim.proc, winner.err, winner.proc)
	}
	if sets[victim.proc].Tokens() != nil || len(sets[winner.proc].Tokens()) != 2 {
		t.Fatalf("%+v: the victim holds %v, the other %v; want nothing and both keys", tr, sets[victim.proc].Tokens(), sets[winner.proc].Tokens())
	}
	if err := sets[winner.proc].UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	return victim.at.Sub(closed), victim.proc
}

// checkVictims checks the store's records of deadlocks broken since
// start: there are want, and each names as its victim the youngest Set
// of its cycle by the notes: the greatest (Since, identity), each Set's
// Since as its latest note gives it.
func checkVictims(ctx context.Context, t *testing.T, roles driver.Roles, start time.Time, want int) {
	t.Helper()
	since := start.Add(-time.Minute)
	ds, err := roles.Deadlocks.ListDeadlocks(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != want {
		t.Errorf("%d deadlock records, want %d", len(ds), want)
	}
	ws, err := roles.Waits.ListWaits(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]driver.Wait{}
	for _, w := range ws {
		if w.N > latest[w.Set].N {
			latest[w.Set] = w
		}
	}
	for _, d := range ds {
		youngest := ""
		var at time.Time
		for _, e := range d.Cycle {
			n, ok := latest[e.Set]
			if !ok {
				t.Errorf("deadlock of %s: no note of %s", d.Victim, e.Set)
				continue
			}
			if c := n.Since.Compare(at); c > 0 || c == 0 && cmp.Less(youngest, e.Set) {
				youngest, at = e.Set, n.Since
			}
		}
		if d.Victim != youngest {
			t.Errorf("deadlock %+v: victim %s, but the youngest by the notes is %s", d, d.Victim, youngest)
		}
	}
}

// perWait lists the commands of sent, by kind, each divided by waits.
func perWait(sent map[string]int, waits int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(sent)) {
		out = append(out, fmt.Sprintf("%s %.1f", k, float64(sent[k])/float64(max(waits, 1))))
	}
	return strings.Join(out, ", ")
}

// pctile is the p-th percentile of sorted ds, by the nearest rank.
func pctile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (p*len(ds) + 99) / 100
	return ds[max(i, 1)-1]
}

// TestLockSetNoFalseDeadlock: waits that make no cycle are never broken.
// Four processes (each its own Client and connection) play groups of
// four places, each place on a process of its own, each group on keys of
// its own, round after round: places 0 to 2 each hold their key in a Set
// and grow it (LockMore), either by the next place's key (a chain: 0
// waits for 1, which waits for 2, which waits for 3) or by place 3's (a
// star); place 3 holds its key in a Set that does not wait, or in a
// plain Mutex (a single lock, no Set), for 2·D + D/2 after the waits
// began, long enough for each waiter to note its wait and check the
// graph twice (on a busy machine a claim's insert can take most of it:
// the notes recorded are logged); then it unlocks, and each waiter
// unlocks once it holds. The groups run at once and rounds alternate
// the four shapes. No LockMore returns an error (ErrDeadlock would be a
// false positive), and the store keeps no deadlock record; the waits,
// those of at least D, the notes recorded and the commands sent per
// wait are logged. 6 waits in 2 groups in the short form, 1,000 in 8 in
// the long one (DSYNC_LONG=1), and -lockset.waits=N plays N in 8 (the
// acceptance run: 10,000).
func TestLockSetNoFalseDeadlock(t *testing.T) {
	t.Parallel()
	waits, groups := sized(*fpWaitsFlag, 6, 1000), 8
	if waits < 3*groups {
		groups = 2
	}
	t.Logf("%d waits in %d groups (-lockset.waits=10000 for the acceptance run)", waits, groups)
	rounds := (waits + groups*(fpPlaces-1) - 1) / (groups * (fpPlaces - 1))
	ctx := testCtx(t, time.Duration(rounds)*(3*fpD+breakSlack)+time.Minute)
	ps := newProcs(t, fpPlaces)
	for _, p := range ps {
		p.cmd.take()
	}
	start := time.Now()
	var tally fpTally
	var wg sync.WaitGroup
	for g := range groups {
		grp := newFPGroup(t, ps, g)
		wg.Go(func() {
			for r := range rounds {
				if !grp.round(ctx, t, r, &tally) {
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	sent := map[string]int{}
	for _, p := range ps {
		for k, n := range p.cmd.take() {
			sent[k] += n
		}
	}
	ws, err := ps[0].b.s.Roles().Waits.ListWaits(ctx, start.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ps[0].b.s.Roles().Deadlocks.ListDeadlocks(ctx, start.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d waits in %v (%.1f/s), %d of at least D (%v), %d notes recorded; false positives: %d, deadlock records: %d",
		tally.waits, took.Round(time.Millisecond), float64(tally.waits)/took.Seconds(), tally.longWaits, fpD, len(ws), tally.broken, len(ds))
	t.Logf("commands per wait, all processes (the Sets' and Mutexes' of the rounds, renewals included): %s", perWait(sent, tally.waits))
	if tally.broken > 0 || len(ds) > 0 {
		t.Errorf("%d waits broken as deadlocks, %d deadlock records; want none: no wait was part of a cycle", tally.broken, len(ds))
	}
	if tally.waits < waits {
		t.Errorf("%d waits played, want %d", tally.waits, waits)
	}
}

// fpD is the deadlock timeout of TestLockSetNoFalseDeadlock: the
// trials' (a shorter one did not make the waits cheaper: the store's
// reads and writes, not the timer, set the pace).
const fpD = cycleD

// fpPlaces is the number of places of a group of TestLockSetNoFalseDeadlock,
// and of its processes.
const fpPlaces = 4

// fpTally counts what the waits of TestLockSetNoFalseDeadlock did.
type fpTally struct {
	mu        sync.Mutex
	waits     int // LockMores that waited
	longWaits int // of which those that waited D or longer
	broken    int // of which those given up as a deadlock's victim
}

// fpGroup is one group of TestLockSetNoFalseDeadlock: each place's
// process, and its Mutexes by key, kept from round to round.
type fpGroup struct {
	g     int
	procs [fpPlaces]*proc
	mus   [fpPlaces]map[string]*dsync.Mutex // by place, then key
}

func newFPGroup(t *testing.T, ps []*proc, g int) *fpGroup {
	grp := &fpGroup{g: g}
	for i := range fpPlaces {
		grp.procs[i] = ps[(g+i)%len(ps)]
		grp.mus[i] = map[string]*dsync.Mutex{}
		for _, k := range []int{i, i + 1, fpPlaces - 1} {
			if k < fpPlaces {
				grp.mus[i][grp.key(k)] = newMutex(t, grp.procs[i].b.Client, grp.key(k))
			}
		}
	}
	return grp
}

// key is the key of place i of the group.
func (grp *fpGroup) key(i int) string { return fmt.Sprintf("fp%d-%d", grp.g, i) }

// set returns a new Set, detecting deadlocks, of place i's own key.
func (grp *fpGroup) set(t *testing.T, i int) *lockset.Set {
	s, err := lockset.New(grp.procs[i].b.Client, []lockset.Member{lockset.Mutex(grp.mus[i][grp.key(i)])}, lockset.WithDeadlockTimeout(fpD))
	if err != nil {
		t.Error(err)
		return nil
	}
	return s
}

// round plays round r of the group: a chain in even rounds, a star in
// odd ones; the last place a Set in rounds 0 and 1 of every four, a
// plain Mutex in the others. It returns false after reporting an error.
func (grp *fpGroup) round(ctx context.Context, t *testing.T, r int, tally *fpTally) bool {
	chain, endIsSet := r%2 == 0, r/2%2 == 0
	end := fpPlaces - 1
	unlockEnd, ok := grp.holdEnd(ctx, t, endIsSet)
	if !ok {
		return false
	}
	sets := make([]*lockset.Set, end)
	for i := range sets {
		if sets[i] = grp.set(t, i); sets[i] == nil {
			return false
		}
		if err := sets[i].LockContext(ctx); err != nil {
			t.Error(err)
			return false
		}
	}
	var wg sync.WaitGroup
	for i, s := range sets {
		want := end
		if chain {
			want = i + 1
		}
		m := grp.mus[i][grp.key(want)]
		wg.Go(func() { grp.wait(ctx, t, s, m, tally) })
	}
	time.Sleep(2*fpD + fpD/2)
	if err := unlockEnd(); err != nil {
		t.Error(err)
	}
	wg.Wait()
	return !t.Failed()
}

// holdEnd locks the last place's key, in a Set that does not wait or a
// plain Mutex, and returns its unlock.
func (grp *fpGroup) holdEnd(ctx context.Context, t *testing.T, asSet bool) (func() error, bool) {
	end := fpPlaces - 1
	if !asSet {
		m := grp.mus[end][grp.key(end)]
		if err := m.LockContext(ctx); err != nil {
			t.Error(err)
			return nil, false
		}
		return func() error { return m.UnlockContext(ctx) }, true
	}
	s := grp.set(t, end)
	if s == nil {
		return nil, false
	}
	if err := s.LockContext(ctx); err != nil {
		t.Error(err)
		return nil, false
	}
	return func() error { return s.UnlockContext(ctx) }, true
}

// wait grows s by m, tallies the wait, and unlocks s once it holds.
func (grp *fpGroup) wait(ctx context.Context, t *testing.T, s *lockset.Set, m *dsync.Mutex, tally *fpTally) {
	began := time.Now()
	err := s.LockMore(ctx, lockset.Mutex(m))
	waited := time.Since(began)
	tally.mu.Lock()
	tally.waits++
	if waited >= fpD {
		tally.longWaits++
	}
	if errors.Is(err, lockset.ErrDeadlock) {
		tally.broken++
	}
	tally.mu.Unlock()
	switch {
	case errors.Is(err, lockset.ErrDeadlock):
		t.Errorf("group %d: a wait that closes no cycle was broken: %v", grp.g, err)
	case err != nil:
		t.Errorf("group %d: LockMore: %v", grp.g, err)
	default:
		if err := s.UnlockContext(ctx); err != nil {
			t.Error(err)
		}
	}
}
