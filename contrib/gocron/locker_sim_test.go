package dsyncgocron_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/apisim"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// The Locker in the public-API simulation (integration/apisim): every
// simulated process makes a Locker on each incarnation's Client, and its
// workers tick jobs through it as gocron does (Lock, run, Unlock through
// the returned gocron.Lock), beside the primitives' operations and under
// all of the simulation's faults. The checker judges the promise of the
// package documentation: "a slot's run starts at most once, across every
// scheduler on the store".

var (
	lockerSeeds = flag.Int("gocron.seeds", 0, "Locker simulation: seeds to run (default 200; 20 with -short)")
	lockerSeed  = flag.Int64("gocron.seed", -1, "Locker simulation: run only this seed, and show its violations in full")
	lockerDur   = flag.Duration("gocron.duration", 0, "Locker simulation: fake time simulated per seed (default 30s)")
	lockerAll   = flag.Bool("gocron.all", false, "Locker simulation: fail on every promise's violations, not only the Locker's")
)

// simSlot is the simulated Locker's slot length: a few seconds, so that
// several processes' ticks fall in one slot.
const simSlot = 3 * time.Second

// simJobs is how many jobs the processes tick.
const simJobs = 2

// PromiseSlot and PromiseLockErrors name the violations of the Locker's
// promises.
const (
	PromiseSlot       = "gocron-slot"   // a slot's run starts at most once
	PromiseLockErrors = "gocron-errors" // Lock fails only with its documented errors
)

// Outcomes of a Lock, as the actions record them.
const (
	lockWon         = "won"
	lockRunning     = "running"     // ErrRunning
	lockTaken       = "taken"       // ErrSlotTaken
	lockUnavailable = "unavailable" // ErrUnavailable, and why
	lockCtx         = "ctx"         // ctx ended first
	lockOther       = "other"       // none of the documented errors
)

// lockerActor is the Locker as an apisim.Actor.
func lockerActor() apisim.Actor {
	return apisim.Actor{
		Name:  "gocron",
		Share: 0.3,
		Start: func(env *apisim.Env) func(ctx context.Context, who string) {
			l, err := dsyncgocron.NewLocker(env.Client, simSlot)
			if err != nil {
				panic(err)
			}
			return func(ctx context.Context, who string) { tick(ctx, env, l, who) }
		},
		Check: CheckSlots,
	}
}

// tick is one tick of one scheduler for a job: half the time at a
// scheduled time (a multiple of the slot length on the process's clock,
// give or take 200 ms of skew and load), else at any moment (a tick late
// by a pause, or near a slot's rounding boundary). A won slot runs the
// job, now and then longer than a slot, so that the next tick finds it
// running; then it unlocks as gocron does, with the job's context.
func tick(ctx context.Context, env *apisim.Env, l *dsyncgocron.Locker, who string) {
	job := "job0"
	if env.Chance(0.5) {
		job = fmt.Sprintf("job%d", simJobs-1)
	}
	if env.Chance(0.5) {
		now := env.Now()
		next := now.Truncate(simSlot).Add(simSlot)
		env.Sleep(ctx, next.Sub(now)+env.Rand(-200*time.Millisecond, 200*time.Millisecond))
		if env.WaitRunning(ctx) != nil {
			return
		}
	}
	ttl := env.TTL()
	lctx, cancel := context.WithTimeout(ctx, env.Rand(ttl, 8*ttl))
	defer cancel()
	// The Locker reads time.Now: fake time, which stands still while this
	// goroutine runs (it moves only when every goroutine of the bubble is
	// blocked), so the slot named here is the one Lock claims.
	a := &apisim.Action{Who: who, Key: l.SlotKey(job, time.Now()), Call: time.Now()}
	lk, err := l.Lock(lctx, job)
	a.Return = time.Now()
	a.Outcome = lockOutcome(lctx, err)
	env.Record(a)
	if err != nil {
		return
	}
	run := env.Rand(0, ttl)
	if env.Chance(0.1) {
		run = env.Rand(simSlot/2, 2*simSlot)
	}
	env.Sleep(ctx, run)
	_ = env.WaitRunning(context.Background()) // a paused process runs no code
	_ = lk.Unlock(ctx)
}

// lockOutcome names a Lock's outcome.
func lockOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return lockWon
	case errors.Is(err, dsyncgocron.ErrRunning):
		return lockRunning
	case errors.Is(err, dsyncgocron.ErrSlotTaken):
		return lockTaken
	case errors.Is(err, dsyncgocron.ErrUnavailable) && errors.Is(err, dsync.ErrSpan):
		return lockUnavailable + " (span refused)"
	case errors.Is(err, dsyncgocron.ErrUnavailable) && errors.Is(err, dsync.ErrUnconfirmed):
		return lockUnavailable + " (unconfirmed)"
	case errors.Is(err, dsyncgocron.ErrUnavailable) && errors.Is(err, dsync.ErrRanTwice):
		return lockUnavailable + " (ran twice)"
	case errors.Is(err, dsyncgocron.ErrUnavailable):
		return lockUnavailable
	case ctx.Err() != nil:
		return lockCtx
	default:
		return lockOther + ": " + err.Error()
	}
}

// CheckSlots judges the Locker's actions:
//   - "a slot's run starts at most once, across every scheduler on the
//     store": at most one Lock of a slot returns a lock, so no winner was
//     told it won a slot that another replica also won. Within an era
//     (apisim.Action.Era): an emptying of the collections takes the
//     slots' records away (a Once's done record, docs/operations.md),
//     and a tick after it may run the slot again;
//   - Lock "fails with ErrRunning or ErrSlotTaken ..., with
//     ErrUnavailable ..., or with ctx's cause when ctx ended first".
func CheckSlots(h *apisim.History) []apisim.Violation {
	type slotEra struct {
		key string
		era int
	}
	won := make(map[slotEra][]*apisim.Action)
	var vs []apisim.Violation
	for _, a := range h.Actions {
		if a.Actor != "gocron" {
			continue
		}
		switch {
		case a.Outcome == lockWon:
			k := slotEra{a.Key, a.Era}
			won[k] = append(won[k], a)
		case strings.HasPrefix(a.Outcome, lockOther):
			vs = append(vs, apisim.Violation{Promise: PromiseLockErrors, What: fmt.Sprintf("%v: not a documented error of Lock", a)})
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(won), func(a, b slotEra) int { return strings.Compare(a.key, b.key) }) {
		if ws := won[k]; len(ws) > 1 {
			vs = append(vs, apisim.Violation{Promise: PromiseSlot, What: fmt.Sprintf("%d Locks won slot %s: %v", len(ws), k.key, ws)})
		}
	}
	return vs
}

// lockerSimSeeds is the seeds of a run: -gocron.seed alone, or the first
// -gocron.seeds.
func lockerSimSeeds() []int64 {
	if *lockerSeed >= 0 {
		return []int64{*lockerSeed}
	}
	n := *lockerSeeds
	if n == 0 {
		n = 200
		if !longtest.Enabled() {
			n = 40
		}
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// simulateLocker runs one seed in a bubble of its own.
func simulateLocker(t *testing.T, seed int64) apisim.Report {
	var r apisim.Report
	synctest.Test(t, func(t *testing.T) {
		r = apisim.Simulate(seed, apisim.Options{Duration: *lockerDur, Actors: []apisim.Actor{lockerActor()}})
	})
	return r
}

// TestLockerSimulation runs the Locker beside the primitives under every
// fault of the seeds, and checks its promises with every other; it prints
// the simulation's summary line and the slots won.
//
// It fails on the Locker's promises, and logs the others' violations
// (-gocron.all: fails on them too). Those are integration/apisim's
// to judge, in its own TestSimulation, which meets them too, about once in 3,000
// seeds (a Once.Do that returned nil on its record's reply after the
// oracle's deadline of its hold); beside the Locker they were seen about
// once in 2,000 seeds, not yet explained: seed 572 of one 2,000-seed run
// (one leader, and a mutex's exclusion, broken at one moment: p1 took
// over keys of two of p3's sessions early), and seed 56 of a 200-seed run
// (the Once.Do case). Failing on them here would fail this test one run
// in ten.
func TestLockerSimulation(t *testing.T) {
	skipUnderRace(t)
	var total apisim.Figures
	slots, others := 0, 0
	start := time.Now()
	for _, seed := range lockerSimSeeds() {
		r := simulateLocker(t, seed)
		total.Add(r.Figures)
		for _, a := range r.History.Actions {
			if a.Outcome == lockWon {
				slots++
			}
		}
		shown := 0
		for _, v := range r.Violations {
			mine := v.Promise == PromiseSlot || v.Promise == PromiseLockErrors
			if !mine {
				others++
			}
			if shown == 5 && *lockerSeed < 0 {
				continue
			}
			shown++
			if mine || *lockerAll {
				t.Errorf("seed %d: %v", seed, v)
			} else {
				t.Logf("seed %d: not the Locker's promise (integration/apisim's): %v", seed, v)
			}
		}
	}
	if others > 0 {
		t.Logf("%d violations of other promises than the Locker's, logged above", others)
	}
	if total.Ops["gocron "+lockWon] == 0 || total.Ops["gocron "+lockTaken] == 0 {
		t.Errorf("the Locker never won, or never found a slot taken: nothing was judged (%v)", total.Ops)
	}
	t.Logf("%v; %d slots won (%v)", total, slots, time.Since(start).Round(time.Second))
}

func TestCheckSlots(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	act := func(proc int, key, outcome string, call int) *apisim.Action {
		return &apisim.Action{Actor: "gocron", Proc: proc, Who: fmt.Sprintf("p%d.w0", proc), Key: key, Outcome: outcome, Call: at(call), Return: at(call + 10)}
	}
	inEra := func(a *apisim.Action, era int) *apisim.Action { a.Era = era; return a }
	for _, c := range []struct {
		name    string
		h       apisim.History
		promise string
		want    int
	}{
		{"one win", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockWon, 0), act(1, "s1", lockTaken, 20)}}, PromiseSlot, 0},
		{"two wins of a slot", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockWon, 0), act(1, "s1", lockWon, 20)}}, PromiseSlot, 1},
		{"two wins, one replica", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockWon, 0), act(0, "s1", lockWon, 5000)}}, PromiseSlot, 1},
		{"distinct slots", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockWon, 0), act(1, "s2", lockWon, 20)}}, PromiseSlot, 0},
		{"an emptying between", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockWon, 0), inEra(act(1, "s1", lockWon, 200), 1)}}, PromiseSlot, 0},
		{"an emptying before both", apisim.History{Actions: []*apisim.Action{inEra(act(0, "s1", lockWon, 200), 1), inEra(act(1, "s1", lockWon, 300), 1)}}, PromiseSlot, 1},
		{"another actor", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockWon, 0), func() *apisim.Action { a := act(1, "s1", lockWon, 20); a.Actor = "other"; return a }()}}, PromiseSlot, 0},
		{"documented errors", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockRunning, 0), act(1, "s1", lockUnavailable, 0), act(2, "s1", lockCtx, 0)}}, PromiseLockErrors, 0},
		{"an undocumented error", apisim.History{Actions: []*apisim.Action{act(0, "s1", lockOther+": boom", 0)}}, PromiseLockErrors, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			vs := CheckSlots(&c.h)
			for _, v := range vs {
				if v.Promise == c.promise {
					n++
				}
			}
			if n != c.want {
				t.Errorf("%d violations of %s, want %d: %v", n, c.promise, c.want, vs)
			}
		})
	}
}

// TestLockerDebugSeed runs -gocron.seed again and again until it breaks a
// promise (goroutines' order is not the seed's), and shows every Lock of
// the slots it judged broken, and the emptyings.
func TestLockerDebugSeed(t *testing.T) {
	if *lockerSeed < 0 {
		t.Skip("needs -gocron.seed")
	}
	skipUnderRace(t)
	var r apisim.Report
	for range 30 {
		if r = simulateLocker(t, *lockerSeed); len(r.Violations) > 0 {
			break
		}
	}
	bad := make(map[string]bool)
	for _, v := range r.Violations {
		t.Error(v)
		for _, a := range r.History.Actions {
			if strings.Contains(v.What, a.Key) {
				bad[a.Key] = true
			}
		}
	}
	for _, a := range r.History.Actions {
		if bad[a.Key] {
			t.Logf("%v", a)
		}
	}
	t.Logf("emptyings at %v", r.History.Emptyings)
}
