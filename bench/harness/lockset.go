package harness

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LockSets is a Conn of a library with lock sets: several keys held all
// or nothing, each with a fencing token of its own.
type LockSets interface {
	// LockSet locks every key of keys, named in any order, on a lease
	// of ttl, and returns each key's fencing token, in the order of
	// keys, and a function that releases them all. On an error it holds
	// none of them.
	LockSet(ctx context.Context, keys []string, ttl time.Duration) (tokens []uint64, unlock func(context.Context) error, err error)
}

// A Tokener is a Locker whose hold has a fencing token.
type Tokener interface {
	// Token is the fencing token of the current hold.
	Token() uint64
}

// The two ways a process of the lockset scenario takes a set of keys.
const (
	setsAsSet     = "set"     // one lock set (LockSets)
	setsByMutexes = "mutexes" // the keys sorted, then a Mutex each, one by one
)

// Smallest and largest number of keys in one set of the lockset scenario.
const (
	setMinKeys = 2
	setMaxKeys = 4
)

// lockset: LockSetProcs processes take sets of 2 to 4 of LockSetKeys
// keys, drawn at random and named in random order, as fast as they can,
// each set let go as soon as it is held; then the same work as Mutexes
// locked one by one in the keys' order, as a user without lock sets
// would write it. The two ways take turns, a run of each at a time, so
// that a change of the machine's load falls on both, and each run has a
// namespace of its own: a store keeps a busy key's recent history (on
// FerretDB, whose reads decode a collection, that slows every read), so
// that a run in a namespace used before would pay for the runs before
// it. The hold intervals and tokens the processes report are checked: no
// key held by two sets at once, every hold's token above the key's
// previous hold's, and every set held within LockSetBound.
func (rn *runner) lockset(ctx context.Context) error {
	if lacks, err := rn.lacking(ctx, LockSetScenario, func(c Conn) bool { _, ok := c.(LockSets); return ok }); lacks || err != nil {
		return err
	}
	samples := map[string]*setSamples{setsAsSet: {}, setsByMutexes: {}}
	runs := max(rn.o.Runs, 1)
	for run := range runs {
		// The sets of this run: the run's share of LockSetSets.
		sets := rn.o.LockSetSets*(run+1)/runs - rn.o.LockSetSets*run/runs
		for _, way := range []string{setsAsSet, setsByMutexes} {
			res, err := rn.setsInNamespace(ctx, way, sets, uint64(run+1))
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", way, run+1, err)
			}
			samples[way].add(res)
			rn.logf("%s: lockset %s run %d: %d sets, %.1f sets/s, held p50 %.1f ms p99 %.1f ms max %.1f ms (process %d, keys %v); overlaps %d, stuck %d, tokens not above %d",
				rn.d.Name(), way, run+1, res.held, res.rate, res.p50, res.p99, res.most, res.slowest.proc, res.slowest.keys, res.overlaps, res.stuck, res.tokensBelow)
		}
	}
	for _, way := range []string{setsAsSet, setsByMutexes} {
		samples[way].report(rn.r, rn.setsParam(way), rn.o.LockSetBound)
	}
	return nil
}

// setsInNamespace runs LockSetProcs processes in a fresh namespace,
// warms them up (every key's first claims, and each process's first
// sets, outside the figures), then has them take sets sets in way, as
// setsRun does.
func (rn *runner) setsInNamespace(ctx context.Context, way string, sets int, seed uint64) (setsResult, error) {
	n := rn.o.LockSetProcs
	ns := rn.ns("sets")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n, childSpec{NS: ns, Kind: kindLockSet, TTL: DefaultTTL})
	if err != nil {
		return setsResult{}, err
	}
	defer g.close()
	if _, err := rn.setsRun(ctx, g, way, 2*n, 0); err != nil {
		return setsResult{}, fmt.Errorf("warm-up: %w", err)
	}
	return rn.setsRun(ctx, g, way, sets, seed)
}

// How the params of the lockset scenario's figures end, for each way
// of taking sets.
const (
	setsAsSetParam     = "one lock set each"
	setsByMutexesParam = "Mutexes locked one by one in the keys' order (baseline)"
)

// setsParam names the figures of one way of taking sets.
func (rn *runner) setsParam(way string) string {
	how := setsAsSetParam
	if way == setsByMutexes {
		how = setsByMutexesParam
	}
	return fmt.Sprintf("%s, %d keys, sets of %d–%d: %s", count(rn.o.LockSetProcs, "process"), rn.o.LockSetKeys, setMinKeys, setMaxKeys, how)
}

// setsResult is what one run of one way of taking sets measured.
type setsResult struct {
	held, stuck, overlaps, tokensBelow int
	rate                               float64 // sets held per second, all processes
	p50, p99, most                     float64 // time to hold, ms
	slowest                            setHold // the set with the most
	commands                           float64 // per set, all processes
}

// setsRun has the processes of g take sets sets in all, in way, from a
// common start (the random draws seeded by seed and each process's
// number), and checks what they report.
func (rn *runner) setsRun(ctx context.Context, g *group, way string, sets int, seed uint64) (setsResult, error) {
	n := len(g.at)
	before, err := groupCommands(ctx, g)
	if err != nil {
		return setsResult{}, err
	}
	start := Mono() + int64(300*time.Millisecond)
	for i := range n {
		// Each process's share: sets split as evenly as they go.
		mine := sets*(i+1)/n - sets*i/n
		g.send(i, "sets", way, mine, seed*1000+uint64(i), rn.o.LockSetKeys, int64(rn.o.LockSetBound), start)
	}
	var holds []setHold
	var res setsResult
	var end int64
	for done := 0; done < n; {
		// A process that reports nothing for longer than a set may take
		// is stuck beyond the bound it enforces itself.
		m, err := g.waitAny(ctx, []string{"set", "stuck", "setsdone"}, rn.o.LockSetBound+time.Minute)
		if err != nil {
			return setsResult{}, err
		}
		switch m.kind {
		case "set":
			h, err := parseSetHold(m)
			if err != nil {
				return setsResult{}, err
			}
			holds = append(holds, h)
			end = max(end, h.released)
		case "stuck":
			res.stuck++
			rn.logf("%s: lockset %s: process %d did not hold keys %v within %v", rn.d.Name(), way, m.proc, m.args[1:], rn.o.LockSetBound)
		case "setsdone":
			done++
		}
	}
	after, err := groupCommands(ctx, g)
	if err != nil {
		return setsResult{}, err
	}
	res.held = len(holds)
	res.overlaps, res.tokensBelow = checkSetHolds(holds)
	waits := make([]float64, len(holds))
	for i, h := range holds {
		waits[i] = ms(h.acquired - h.called)
	}
	res.p50, res.p99 = Percentile(waits, 50), Percentile(waits, 99)
	for i, w := range waits {
		if w > res.most {
			res.most, res.slowest = w, holds[i]
		}
	}
	if len(holds) > 0 {
		res.rate = float64(len(holds)) / (float64(end-start) / 1e9)
	}
	if len(holds)+res.stuck > 0 {
		res.commands = (after - before) / float64(len(holds)+res.stuck)
	}
	return res, nil
}

// groupCommands is the commands every Client of g has sent so far.
func groupCommands(ctx context.Context, g *group) (float64, error) {
	var sum float64
	for i := range g.at {
		g.send(i, "stats")
		m, err := g.wait(ctx, "stats", i, time.Minute)
		if err != nil {
			return 0, err
		}
		sum += float64(m.args[1])
	}
	return sum, nil
}

// setSamples are the figures of one way of taking sets, over the runs.
type setSamples struct {
	rate, p50, p99, most, commands     []float64
	held, stuck, overlaps, tokensBelow int
}

func (s *setSamples) add(r setsResult) {
	s.rate, s.p50, s.p99 = append(s.rate, r.rate), append(s.p50, r.p50), append(s.p99, r.p99)
	s.most = append(s.most, r.most)
	s.commands = append(s.commands, r.commands)
	s.held += r.held
	s.stuck += r.stuck
	s.overlaps += r.overlaps
	s.tokensBelow += r.tokensBelow
}

// report adds the figures to r: rates and times are the median of the
// runs, the counts the sums over all of them.
func (s *setSamples) report(r *Report, param string, bound time.Duration) {
	r.add(LockSetScenario, param, "sets held per second, all processes", "sets/s", s.rate, "")
	r.add(LockSetScenario, param, "time to hold a set (Lock called → returned) p50", "ms", s.p50, "")
	r.add(LockSetScenario, param, "time to hold a set p99", "ms", s.p99, "")
	r.add(LockSetScenario, param, "time to hold a set, most of all runs", "ms", maxOf(s.most), "")
	r.add(LockSetScenario, param, "commands per set, all processes (renewals included)", "cmds", s.commands, "")
	total := func(v int) []float64 { return []float64{float64(v)} }
	r.add(LockSetScenario, param, "sets held, all runs", "sets", total(s.held), "")
	r.add(LockSetScenario, param, fmt.Sprintf("sets not held within %v (must be 0)", bound), "sets", total(s.stuck), "")
	r.add(LockSetScenario, param, "holds of a key overlapping another's (must be 0)", "holds", total(s.overlaps), "")
	r.add(LockSetScenario, param, "holds whose token is not above the key's previous hold's (must be 0)", "holds", total(s.tokensBelow), "")
}

// errBadSetLine: a process reported a set in a line that does not parse.
var errBadSetLine = errors.New("a set's line does not parse")

// parseSetHold reads a "set" line: "set <called> <acquired> <released>"
// then a key's number and its token for each key of the set (Mono
// times, as the process read them).
func parseSetHold(m msg) (setHold, error) {
	a := m.args
	if len(a) < 3+2*setMinKeys || (len(a)-3)%2 != 0 {
		return setHold{}, fmt.Errorf("%w: process %d: %q", errBadSetLine, m.proc, m.text)
	}
	h := setHold{proc: m.proc, called: a[0], acquired: a[1], released: a[2]}
	for i := 3; i+1 < len(a); i += 2 {
		if a[i] < 0 || a[i+1] <= 0 {
			return setHold{}, fmt.Errorf("%w: process %d: %q", errBadSetLine, m.proc, m.text)
		}
		h.keys = append(h.keys, int(a[i]))
		h.tokens = append(h.tokens, uint64(a[i+1]))
	}
	return h, nil
}
