package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// partition: PartShards shards of one job over n processes, each a member
// of a partitioned election whose per-shard fn reports when it starts and
// when it returns (with the term's token): ownership is seen from the
// members themselves. For each n, the last member joins a balanced
// partition of the others (the time until the shards are balanced again,
// and the shards moved against the fewest possible), everybody sends what
// it sends while nothing changes, then the last member leaves gracefully,
// joins again, and is killed with SIGKILL.
func (rn *runner) partition(ctx context.Context) error {
	if lacks, err := rn.lacking(ctx, PartitionScenario, func(c Conn) bool { _, ok := c.(Partitions); return ok }); lacks || err != nil {
		return err
	}
	var errs []error
	for _, n := range rn.o.PartProcs {
		var sm partSamples
		var failed error
		for run := range rn.o.Runs {
			if err := rn.partitionRun(ctx, n, &sm); err != nil {
				failed = fmt.Errorf("%s, run %d: %w", count(n, "process"), run+1, err)
				errs = append(errs, failed)
				break
			}
		}
		note := ""
		if failed != nil {
			note = "failed: " + failed.Error()
		}
		sm.report(rn.r, fmt.Sprintf("%s, %d shards", count(n, "process"), rn.o.PartShards), rn.o.PartTTL, note)
	}
	return errors.Join(errs...)
}

// partSamples are the figures of one number of processes, over its runs.
type partSamples struct {
	hb                                 time.Duration // the members' heartbeat interval
	joinMs, joinHB, joinMoved, joinMin []float64
	leaveMs, leaveMoved, leaveMin      []float64
	killOwned, killOwnedMs, killBalMs  []float64 // killOwned in TTLs
	killMoved, killMin                 []float64
	handoffs                           []float64 // ms, every graceful move of a shard
	violations                         float64   // overlapping fns, tokens not increasing
	steadyPerS, steadyPerHB            []float64 // per member, one sample a run
	steadyByName                       map[string][]float64
	// steadyUpkeep, steadyOwn: per member per heartbeat, one sample a
	// run: what any process holding a lease sends (leaseUpkeep), and the
	// rest, the partition's own (its status writes and members reads).
	steadyUpkeep, steadyOwn []float64
	steadyRuns              int
}

// partitionRun is one run with n processes.
func (rn *runner) partitionRun(ctx context.Context, n int, sm *partSamples) error {
	ns := rn.ns("part")
	defer rn.drop(ctx, ns)
	ttl := rn.o.PartTTL
	g, err := spawn(ctx, n, childSpec{NS: ns, Key: "job", Kind: kindPartition, TTL: ttl, Shards: rn.o.PartShards})
	if err != nil {
		return err
	}
	defer g.close()
	pt := newPartTracker(g, rn.o.PartShards, ttl)
	members := func(k int) []int {
		out := make([]int, k)
		for i := range out {
			out[i] = i
		}
		return out
	}
	// The first n-1 join together, unmeasured.
	if n > 1 {
		for i := range n - 1 {
			g.send(i, "join")
		}
		for i := range n - 1 {
			if _, err := pt.joined(ctx, i); err != nil {
				return err
			}
		}
		if _, _, err := pt.settle(ctx, 0, members(n-1), nil); err != nil {
			return fmt.Errorf("first %d members: %w", n-1, err)
		}
	}
	join := func() error {
		g.send(n-1, "join")
		t0, err := pt.joined(ctx, n-1)
		if err != nil {
			return err
		}
		ch, least, err := pt.settle(ctx, t0, members(n), nil)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		d := ms(ch.balancedAt - t0)
		sm.joinMs, sm.joinHB = append(sm.joinMs, d), append(sm.joinHB, d/ms(int64(pt.hb)))
		sm.joinMoved, sm.joinMin = append(sm.joinMoved, float64(ch.moved)), append(sm.joinMin, float64(least))
		sm.handoffs = append(sm.handoffs, ch.handoffs...)
		rn.logf("%s: partition %s: join balanced in %.0f ms, %d shards moved (fewest %d)%s", rn.d.Name(), count(n, "process"), d, ch.moved, least, handoffText(ch.handoffs))
		return nil
	}
	if err := join(); err != nil {
		return err
	}
	sm.hb = pt.hb
	if err := rn.partSteady(ctx, g, n, pt.hb, sm); err != nil {
		return err
	}
	if n == 1 {
		// Nobody would be left to take the shards over.
		sm.violations += float64(pt.violations)
		return nil
	}
	// A graceful leave (Run's context ends, then Close).
	g.send(n-1, "leave")
	l, err := g.wait(ctx, "leaving", n-1, time.Minute)
	if err != nil {
		return err
	}
	ch, least, err := pt.settle(ctx, l.args[0], members(n-1), nil)
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	if _, err := g.wait(ctx, "left", n-1, time.Minute); err != nil {
		return err
	}
	d := ms(ch.balancedAt - l.args[0])
	sm.leaveMs = append(sm.leaveMs, d)
	sm.leaveMoved, sm.leaveMin = append(sm.leaveMoved, float64(ch.moved)), append(sm.leaveMin, float64(least))
	sm.handoffs = append(sm.handoffs, ch.handoffs...)
	rn.logf("%s: partition %s: leave balanced in %.0f ms, %d shards moved (fewest %d)%s", rn.d.Name(), count(n, "process"), d, ch.moved, least, handoffText(ch.handoffs))
	// The same member joins again (a second join), then is killed.
	if err := join(); err != nil {
		return err
	}
	// Kill at a random point of the member's renewal cycle.
	time.Sleep(ttl/5 + rand.N(ttl/2))
	t0 := g.kill(n - 1)
	ch, least, err = pt.settle(ctx, t0, members(n-1), []int{n - 1})
	if err != nil {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	owned := ms(ch.ownedAt - t0)
	sm.killOwned, sm.killOwnedMs = append(sm.killOwned, owned/ms(int64(ttl))), append(sm.killOwnedMs, owned)
	sm.killBalMs = append(sm.killBalMs, ms(ch.balancedAt-t0))
	sm.killMoved, sm.killMin = append(sm.killMoved, float64(ch.moved)), append(sm.killMin, float64(least))
	rn.logf("%s: partition %s: SIGKILL: every shard owned in %.0f ms (%.2f TTL), balanced in %.0f ms, %d moved (fewest %d)",
		rn.d.Name(), count(n, "process"), owned, owned/ms(int64(ttl)), ms(ch.balancedAt-t0), ch.moved, least)
	sm.violations += float64(pt.violations)
	if pt.takenBack > 0 {
		rn.logf("%s: partition %s: %d shard terms taken back by their owner with their token (an outage of the store, or a machine too busy for anyone to renew)",
			rn.d.Name(), count(n, "process"), pt.takenBack)
	}
	return nil
}

// partSteady counts what each of the n members sends over the steady
// window, while the partition is balanced and nothing changes.
func (rn *runner) partSteady(ctx context.Context, g *group, n int, hb time.Duration, sm *partSamples) error {
	names := func() ([]msg, error) {
		out := make([]msg, n)
		for i := range n {
			g.send(i, "names")
			m, err := g.wait(ctx, "names", i, time.Minute)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return out, nil
	}
	a, err := names()
	if err != nil {
		return err
	}
	time.Sleep(rn.o.PartSteadyWindow)
	b, err := names()
	if err != nil {
		return err
	}
	var perS float64
	byName := map[string]float64{}
	for i := range n {
		secs := float64(b[i].args[0]-a[i].args[0]) / 1e9
		perS += float64(b[i].args[1]-a[i].args[1]) / secs / float64(n)
		na, nb := namesCounts(a[i]), namesCounts(b[i])
		for name, k := range nb {
			byName[name] += float64(k-na[name]) / secs / float64(n)
		}
	}
	sm.steadyPerS = append(sm.steadyPerS, perS)
	sm.steadyPerHB = append(sm.steadyPerHB, perS*hb.Seconds())
	if sm.steadyByName == nil {
		sm.steadyByName = map[string][]float64{}
	}
	for name, v := range byName {
		if v == 0 {
			continue
		}
		sm.steadyByName[name] = append(sm.steadyByName[name], v*hb.Seconds())
	}
	var upkeep float64
	for name, v := range byName {
		if leaseUpkeep[name] {
			upkeep += v
		}
	}
	sm.steadyUpkeep = append(sm.steadyUpkeep, upkeep*hb.Seconds())
	sm.steadyOwn = append(sm.steadyOwn, (perS-upkeep)*hb.Seconds())
	sm.steadyRuns++
	rn.logf("%s: partition %s: steady state %.2f commands/s per member, %.2f per heartbeat (%v)", rn.d.Name(), count(n, "process"), perS, perS*hb.Seconds(), hb.Round(time.Millisecond))
	return nil
}

// leaseUpkeep names the commands any process holding a lease sends while
// it holds, Partition or not: the renewal (findAndModify), the revoke
// check (dsync/internal/lease's revoke.go), the event cursor's getMores (and a
// killCursors when it reopens), the server-time samples. The partition's
// own cost is the rest: a member's status writes and members reads.
var leaseUpkeep = map[string]bool{
	"findAndModify": true, "revoke check": true, "getMore": true,
	"killCursors": true, "clock sample": true,
}

// handoffText describes the handoffs of one change for the log.
func handoffText(hs []float64) string {
	if len(hs) == 0 {
		return ""
	}
	return fmt.Sprintf(", handoffs p50 %.0f ms, max %.0f ms", Percentile(hs, 50), slices.Max(hs))
}

// namesCounts reads the counts by command name of a "names" message.
func namesCounts(m msg) map[string]int64 {
	out := map[string]int64{}
	f := strings.Fields(m.text)
	for i := 5; i+1 < len(f); i += 2 {
		k, err := strconv.ParseInt(f[i+1], 10, 64)
		if err == nil {
			out[strings.ReplaceAll(f[i], "_", " ")] = k
		}
	}
	return out
}

// report adds the figures of one number of processes (param) to r.
func (sm *partSamples) report(r *Report, param string, ttl time.Duration, note string) {
	hb := sm.hb.Round(time.Millisecond)
	add := func(metric, unit string, v []float64) { r.add(PartitionScenario, param, metric, unit, v, note) }
	add("join → balanced, median", "ms", sm.joinMs)
	add("join → balanced, max", "ms", maxOf(sm.joinMs))
	add(fmt.Sprintf("join → balanced, median, in heartbeats (%v)", hb), "heartbeats", sm.joinHB)
	add("join: shards moved, most", "shards", maxOf(sm.joinMoved))
	add("join: fewest shards that must move", "shards", sm.joinMin)
	if len(sm.leaveMs) > 0 {
		add("graceful leave (Close) → balanced, median", "ms", sm.leaveMs)
		add("graceful leave (Close) → balanced, max", "ms", maxOf(sm.leaveMs))
		add("graceful leave: shards moved, most", "shards", maxOf(sm.leaveMoved))
		add("graceful leave: fewest shards that must move", "shards", sm.leaveMin)
	}
	if len(sm.handoffs) > 0 {
		add("handoff of one shard (old owner's fn returns → new owner's fn starts), p50", "ms", []float64{Percentile(sm.handoffs, 50)})
		add("handoff of one shard, max", "ms", maxOf(sm.handoffs))
	}
	if len(sm.killOwned) > 0 {
		add(fmt.Sprintf("SIGKILL → every shard owned again, median (TTL %v)", ttl), "× TTL", sm.killOwned)
		add(fmt.Sprintf("SIGKILL → every shard owned again, max (TTL %v)", ttl), "× TTL", maxOf(sm.killOwned))
		add("SIGKILL → every shard owned again, median", "ms", sm.killOwnedMs)
		add("SIGKILL → balanced, median", "ms", sm.killBalMs)
		add("SIGKILL: shards moved, most", "shards", maxOf(sm.killMoved))
		add("SIGKILL: fewest shards that must move", "shards", sm.killMin)
	}
	add("steady state: commands/s per member", "cmds/s", sm.steadyPerS)
	add(fmt.Sprintf("steady state: commands per member per heartbeat (%v)", hb), "cmds", sm.steadyPerHB)
	add("steady state: the lease's upkeep per member per heartbeat (renewal, revoke check, event cursor)", "cmds", sm.steadyUpkeep)
	add("steady state: the partition's own per member per heartbeat (status writes, members reads, the rest)", "cmds", sm.steadyOwn)
	names := make([]string, 0, len(sm.steadyByName))
	for name := range sm.steadyByName {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		// The mean of the runs: a command sent now and then (a clock
		// sample, a cursor's getMore) has a median of 0 over few runs.
		var sum float64
		for _, x := range sm.steadyByName[name] {
			sum += x
		}
		add(fmt.Sprintf("steady state: %s per member per heartbeat, mean of the runs", name), "cmds", []float64{sum / float64(max(sm.steadyRuns, 1))})
	}
	add("two fns of one shard at once, or a token not above the shard's last (must be 0)", "count", []float64{sm.violations})
}
